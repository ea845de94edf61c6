//! Credentials for one registry, and why a source of them cannot be used.

use std::fmt;
use std::sync::Arc;

/// The user name Docker uses for an identity (refresh) token.
pub const IDENTITY_TOKEN_USER: &str = "<token>";

/// A username and password (or token) for one registry.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    /// User name; [`IDENTITY_TOKEN_USER`] when `password` is an identity token.
    pub username: String,
    /// Password or token. Never printed.
    pub password: String,
}

impl Credentials {
    /// Is this an identity token (an OAuth2 refresh token) rather than a password?
    pub fn is_identity_token(&self) -> bool {
        self.username == IDENTITY_TOKEN_USER
    }
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Credentials({}, <redacted>)", self.username)
    }
}

/// A credentials file (or helper, or `--creds` value) that cannot be used.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{path}: {reason}")]
pub struct AuthError {
    /// What is wrong: `auth file PATH`, `credential helper NAME` or `--creds`.
    pub path: String,
    /// What is wrong with it.
    pub reason: String,
    /// The failure underneath (reading the file, parsing it, running the helper), if any.
    #[source]
    pub cause: Option<Arc<dyn std::error::Error + Send + Sync>>,
}

impl AuthError {
    /// `path` cannot be used because of `reason`.
    pub(super) fn new(path: String, reason: impl Into<String>) -> AuthError {
        AuthError {
            path,
            reason: reason.into(),
            cause: None,
        }
    }

    /// `path` cannot be used because of `reason`, which `cause` explains.
    pub(super) fn caused(
        path: String,
        reason: impl Into<String>,
        cause: impl std::error::Error + Send + Sync + 'static,
    ) -> AuthError {
        AuthError {
            cause: Some(Arc::new(cause)),
            ..AuthError::new(path, reason)
        }
    }
}

crate::error::input_errors!(AuthError);
