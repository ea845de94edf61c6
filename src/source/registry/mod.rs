//! A registry speaking the OCI distribution API, read and written through our own small
//! client on hyper-util's pooled client and rustls (docs/decisions.md says why not
//! oci-client, why not reqwest, and why hyper-util's client rather than a pool of our own).
//!
//! A stack, as go-containerregistry's transport is one: each file imports only files listed
//! before it (bottom to top), and this module only declares and re-exports them.
//! - `mutex`: locks of the shared maps that survive a panicked holder;
//! - `connect`: connections (TCP, the environment's proxies with a `CONNECT` tunnel for
//!   HTTPS, TLS with ALPN `h2`/`http/1.1`) made within the connect timeout, each one's
//!   traffic metered;
//! - `transport`: the [`Transport`] seam, and hyper-util's pooled client behind it (HTTP/1.1
//!   kept alive, HTTP/2 by ALPN), a request a stale connection lost sent again on a new one;
//! - `wire`: the one way a request is sent (through its host's transport), answers as
//!   status, headers and a body stream, the client's errors with their URL shown without
//!   credentials or query; a registry's origin, parsed once;
//! - `failure`: why an attempt failed and whether asking again may help (`Failure`); what a
//!   status or a connection error means; exponential backoff with jitter and `Retry-After`;
//!   what the error says once retrying stops; errors on one line without credentials;
//! - `options`: how to reach registries, and the run's request counters;
//! - `request`: what a request asks for (`Kind`, `Request`, a write's `Payload`), of which
//!   repository with which credentials (`Access`); where a registry's API lives;
//! - `tls`: HTTP clients per host and scheme, with certs.d / `--cert-dir` TLS files;
//! - `link`: what every layer above shares (options, the deadline, counters, HTTP clients),
//!   a step within the request timeout;
//! - `body`: bodies read under their size cap (refused before they are buffered) and a
//!   minimum rate, checked against the digests that name them; server text with every form
//!   of a credential redacted;
//! - `ping`: which registries speak plain HTTP, each probed once on first use;
//! - `token`: bearer tokens, cached, batched over the repositories the run expects, fetched;
//! - `challenge`: `WWW-Authenticate` challenges, Basic or Bearer, answered;
//! - `attempt`: one attempt at a request (`/v2/<repo>/manifests/<ref>` with every manifest
//!   media type in `Accept`, `/v2/<repo>/blobs/<digest>`), redirects followed by hand
//!   without the registry's `Authorization` leaving its origin, and what a non-200 answer
//!   means;
//! - `retry`: attempts within request slots, the per-request timeout and the overall
//!   deadline; backoff for connection errors, timeouts, 408/429/5xx, broken-off bodies and
//!   bodies that do not hash to their digest, never for answers that cannot heal; every
//!   retry counted and told as a `tracing` event;
//! - `cache`: manifests and configs fetched once per (repository, digest);
//! - `stream`: blobs handed on piece by piece (`--deep`), resumed when they break off;
//! - `upload`: one write request (authenticated like a read, with a `pull,push` token),
//!   what a write's refusal means, one attempt at a blob upload (POST, PATCH, PUT);
//! - `client`: [`RegistryClient`], one per run, and [`RegistrySource`], its reads;
//! - `writes`: the writes `assemble` makes (mount, upload, manifest PUT), each retried
//!   like a read.
//!
//! Outside this directory it uses only [`crate::auth`], [`crate::digest`],
//! [`crate::reference`], [`crate::manifest`]'s constants and [`crate::source`]'s error and
//! blob types.

mod attempt;
mod body;
mod cache;
mod challenge;
mod client;
mod connect;
mod failure;
mod link;
mod mutex;
mod options;
mod ping;
mod request;
mod retry;
#[cfg(test)]
mod sizes;
mod stream;
mod tls;
mod token;
mod transport;
mod upload;
mod wire;
mod writes;

#[cfg(test)]
mod tests;

pub use client::{RegistryClient, RegistrySource};
pub use options::{ClientOptions, Stats};
pub use transport::{AnswerBody, BoxError, Sending, Transport};
