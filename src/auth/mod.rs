//! Registry credentials (containers-auth.json(5), Docker config files, credential helpers)
//! and per-registry TLS material (containers-certs.d(5)). A stack, each file importing only
//! those above it in this list:
//! - `credentials`: [`Credentials`] and [`AuthError`] (the vocabulary every other file uses);
//! - `certs`: finds TLS files;
//! - `file`: reads auth files;
//! - `helper`: runs credential helpers;
//! - `store`: [`AuthStore`], which answers "which credentials for this reference?".
//!
//! Lookup order (docs/credentials.md): `--no-creds` (none), `--creds USER:PASS` (for every
//! registry), `--authfile` (only that file), else every file that exists of `REGISTRY_AUTH_FILE`,
//! `$XDG_RUNTIME_DIR/containers/auth.json`, `${XDG_CONFIG_HOME:-~/.config}/containers/auth.json`,
//! `$DOCKER_CONFIG/config.json` or `~/.docker/config.json`, `~/.dockercfg`, in that order; the
//! first file with an answer wins. Within a file: `credHelpers[host]`
//! (`docker-credential-<name> get`), then `auths` with the most specific key
//! (`host/namespace/repo`, then `host/namespace`, then `host`), then `credsStore`. An
//! `identitytoken` (or a helper's `<token>` user name) is an OAuth2 refresh token for the
//! registry's token service. Credentials never appear in `Debug` output or messages.

mod certs;
mod credentials;
mod file;
mod helper;
mod store;

pub use certs::{CERTS_D_ROOTS, TlsFiles};
pub use credentials::{AuthError, Credentials, IDENTITY_TOKEN_USER};
pub use store::AuthStore;
