//! What a request asks for, of which repository, with which credentials: the vocabulary of
//! every layer that sends, authenticates, reads or retries one ([`Request`], [`Kind`],
//! [`Payload`] for writes, [`Access`] for the repository and its credentials).

use std::sync::LazyLock;

use http::header::{CONTENT_RANGE, CONTENT_TYPE, HeaderValue};
use http::{Method, Uri};

use super::wire::Outgoing;

use crate::auth::{AuthError, Credentials};
use crate::digest::Digest;
use crate::manifest::{ACCEPTED_MANIFEST_TYPES, OCI_INDEX};
use crate::reference::RegistryRef;
use crate::source::{Detail, FetchError};

/// The actions of a read's token.
pub(super) const PULL: &str = "pull";

/// The `Accept` header of a manifest read: every manifest media type, built once per run
/// (cloning it shares the bytes).
pub(super) static ACCEPT_MANIFESTS: LazyLock<HeaderValue> = LazyLock::new(|| {
    HeaderValue::from_str(&ACCEPTED_MANIFEST_TYPES.join(", ")).expect("media types are ASCII")
});

/// What a request asks for.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Manifest,
    Blob,
    /// `HEAD` of a blob: existence only, no body.
    BlobHead,
    /// The OCI 1.1 referrers of a manifest (`/v2/<repo>/referrers/<digest>`): an image index.
    Referrers,
}

impl Kind {
    /// The path segment under `/v2/<repo>/`.
    pub(super) fn path(self) -> &'static str {
        match self {
            Kind::Manifest => "manifests",
            Kind::Blob | Kind::BlobHead => "blobs",
            Kind::Referrers => "referrers",
        }
    }

    /// The `Accept` header of a read of this kind, if it sends one.
    pub(super) fn accept(self) -> Option<HeaderValue> {
        match self {
            Kind::Manifest => Some(ACCEPT_MANIFESTS.clone()),
            Kind::Referrers => Some(HeaderValue::from_static(OCI_INDEX)),
            Kind::Blob | Kind::BlobHead => None,
        }
    }

    pub(super) fn method(self) -> Method {
        match self {
            Kind::BlobHead => Method::HEAD,
            _ => Method::GET,
        }
    }
}

/// One repository as a request reaches it: its reference and its credentials, or why they
/// could not be looked up. Never printed.
#[derive(Clone)]
pub(super) struct Access {
    pub(super) reference: RegistryRef,
    /// The credentials for this repository, or why they could not be looked up.
    pub(super) creds: Result<Option<Credentials>, AuthError>,
}

impl Access {
    /// The credentials for this repository; a lookup that failed fails every request.
    pub(super) fn credentials(&self) -> Result<Option<&Credentials>, FetchError> {
        match &self.creds {
            Ok(c) => Ok(c.as_ref()),
            // The credentials error's own message, then its cause.
            Err(e) => Err(FetchError::Unavailable(Detail::new(
                e.to_string(),
                e.cause.clone(),
            ))),
        }
    }

    /// A read of `reference_part` (a tag or a digest) of this repository.
    pub(super) fn request<'a>(
        &'a self,
        kind: Kind,
        reference_part: Part<'a>,
        expected: Option<&'a Digest>,
        limit: u64,
        what: String,
    ) -> Request<'a> {
        Request {
            access: self,
            kind,
            reference_part,
            expected,
            limit,
            what,
            spool: false,
            stream: false,
            payload: None,
        }
    }

    /// A request for the manifest or blob `digest`, which its body must hash to. Its path
    /// part (`ALGORITHM:HEX`) is written from the digest straight into the request's path;
    /// its name in messages (`manifest ALGORITHM:HEX`) is built in one buffer of its final
    /// size.
    pub(super) fn by_digest<'a>(
        &'a self,
        kind: Kind,
        digest: &'a Digest,
        limit: u64,
    ) -> Request<'a> {
        let noun = match kind {
            Kind::Manifest => "manifest ",
            Kind::Blob | Kind::BlobHead => "blob ",
            Kind::Referrers => "referrers of ",
        };
        let part = Part::Digest(digest);
        let mut what = String::with_capacity(noun.len() + part.len());
        what.push_str(noun);
        part.push_to(&mut what);
        self.request(kind, part, Some(digest), limit, what)
    }
}

/// The last segment of a request's path: a tag (or a digest given as text), or the digest a
/// read by digest names, written from its parts where it is needed (no text of its own).
pub(super) enum Part<'a> {
    /// A tag, or any text.
    Text(String),
    /// A digest, `ALGORITHM:HEX`.
    Digest(&'a Digest),
}

impl Part<'_> {
    /// The length of its text.
    pub(super) fn len(&self) -> usize {
        match self {
            Part::Text(text) => text.len(),
            Part::Digest(d) => d.algorithm().name().len() + 1 + d.hex().len(),
        }
    }

    /// Appends its text to `buf`.
    pub(super) fn push_to(&self, buf: &mut String) {
        match self {
            Part::Text(text) => buf.push_str(text),
            Part::Digest(d) => {
                buf.push_str(d.algorithm().name());
                buf.push(':');
                buf.push_str(d.hex());
            }
        }
    }
}

impl std::fmt::Display for Part<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Part::Text(text) => f.write_str(text),
            Part::Digest(d) => d.fmt(f),
        }
    }
}

/// One request: a GET of the read path, or a write when it has a [`Payload`].
pub(super) struct Request<'a> {
    pub(super) access: &'a Access,
    pub(super) kind: Kind,
    /// Tag or digest.
    pub(super) reference_part: Part<'a>,
    /// The digest the body must hash to, when the request names one.
    pub(super) expected: Option<&'a Digest>,
    pub(super) limit: u64,
    pub(super) what: String,
    /// Write the body to a temporary file instead of memory (large layers); needs `expected`.
    pub(super) spool: bool,
    /// Leave a 200 answer's body unread, for the caller to stream (`stream.rs`).
    pub(super) stream: bool,
    /// What a write sends (`upload`): its method, headers and body; `None` for reads. A
    /// write asks for a `pull,push` token.
    pub(super) payload: Option<Payload>,
}

impl Request<'_> {
    /// The credentials the request is sent with (to redact them from what the server says).
    pub(super) fn credentials(&self) -> Option<&Credentials> {
        self.access.credentials().ok().flatten()
    }

    /// The token actions this request needs: `pull,push` for a write, else `pull`.
    pub(super) fn actions(&self) -> &'static str {
        if self.payload.is_some() {
            "pull,push"
        } else {
            PULL
        }
    }
}

/// What a write sends: method, headers and body (cheap to clone, so a request answered
/// with a challenge is sent again).
#[derive(Clone)]
pub(super) struct Payload {
    pub(super) method: Method,
    pub(super) content_type: Option<HeaderValue>,
    /// `Content-Range: START-END` (inclusive) of an upload chunk.
    pub(super) range: Option<HeaderValue>,
    pub(super) body: bytes::Bytes,
}

impl Payload {
    /// A write of `method` without a body.
    pub(super) fn empty(method: Method) -> Payload {
        Payload {
            method,
            content_type: None,
            range: None,
            body: bytes::Bytes::new(),
        }
    }

    /// A write of `body` with this `Content-Type`.
    pub(super) fn with_body(
        method: Method,
        content_type: HeaderValue,
        body: bytes::Bytes,
    ) -> Payload {
        Payload {
            method,
            content_type: Some(content_type),
            range: None,
            body,
        }
    }

    /// The HTTP request for `url`.
    pub(super) fn build(&self, url: &Uri) -> Outgoing {
        let mut out = Outgoing::new(self.method.clone(), url.clone()).body(self.body.clone());
        if let Some(ct) = &self.content_type {
            out = out.header(CONTENT_TYPE, ct.clone());
        }
        if let Some(range) = &self.range {
            out = out.header(CONTENT_RANGE, range.clone());
        }
        out
    }
}

/// Where a registry's API lives: Docker Hub's references say `docker.io`, its API answers at
/// `registry-1.docker.io`.
pub(super) fn api_host(registry: &str) -> &str {
    match registry {
        "docker.io" => "registry-1.docker.io",
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::allocs::allocations;
    use crate::reference::ImageRef;

    /// Issue 24: a request by digest costs one allocation, its name in messages (its path
    /// part is written from the digest into the path; each was formatted, growing as it
    /// went, then built in a buffer of its own); the text is unchanged.
    #[test]
    fn a_request_by_digest_allocates_once() {
        let ImageRef::Registry(reference) = "q.io/org/repo:v1".parse().unwrap() else {
            unreachable!("a registry reference")
        };
        let access = Access {
            reference,
            creds: Ok(None),
        };
        for (kind, noun) in [
            (Kind::Manifest, "manifest"),
            (Kind::Blob, "blob"),
            (Kind::BlobHead, "blob"),
        ] {
            for digest in [
                Digest::sha256(b"x"),
                Digest::compute(crate::digest::Algorithm::Sha512, b"x"),
            ] {
                let (req, n) = allocations(|| access.by_digest(kind, &digest, 7));
                assert_eq!(req.reference_part.to_string(), digest.to_string());
                assert_eq!(req.what, format!("{noun} {digest}"));
                assert_eq!(req.expected, Some(&digest));
                assert_eq!(n, 1, "{n} allocations for {}", req.what);
            }
        }
    }
}
