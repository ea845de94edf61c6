//! Where image bytes come from: a registry or an OCI image layout directory.
//!
//! A [`Source`] serves one reference: its top object, and manifests and blobs by digest.
//! Sources return bytes; the graph walker checks every byte against its digest and
//! size itself, so no source is trusted and the engine cannot tell sources apart.

use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

use futures::stream::BoxStream;

use crate::digest::Digest;

pub mod layout;
pub mod registry;
pub mod sink;
pub mod store;

/// The top object a reference names.
#[derive(Debug, Clone)]
pub struct Fetched {
    /// The raw bytes.
    pub bytes: Vec<u8>,
    /// The media type the referrer claimed (index.json descriptor), if any.
    pub media_type: Option<String>,
    /// The digest the referrer claimed for these bytes, if any (a pinned reference, a
    /// layout descriptor, a registry's `Docker-Content-Digest`).
    pub claimed_digest: Option<Digest>,
    /// The size the referrer claimed, if any.
    pub claimed_size: Option<u64>,
}

/// Why a fetch failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum FetchError {
    /// The object does not exist (registry 404, file absent from a layout).
    #[error("not found: {0}")]
    NotFound(String),
    /// The bytes received do not hash to the digest that named them.
    #[error("digest mismatch: expected {expected}, received content hashes to {actual}")]
    DigestMismatch {
        /// The digest asked for.
        expected: String,
        /// What the bytes hash to, or a description when unknown.
        actual: String,
    },
    /// The object is larger than allowed.
    #[error("{what} is larger than the {limit}-byte limit")]
    TooLarge {
        /// What was being fetched.
        what: String,
        /// The limit in bytes.
        limit: u64,
    },
    /// The user's input is wrong (not a layout, unknown tag, path escaping the layout).
    #[error(transparent)]
    BadInput(Detail),
    /// The check could not be completed (network, auth, registry error).
    #[error(transparent)]
    Unavailable(Detail),
}

impl FetchError {
    /// The check could not be completed, for the reason `message` gives.
    pub fn unavailable(message: impl Into<String>) -> FetchError {
        FetchError::Unavailable(Detail::new(message, None))
    }

    /// The check could not be completed: `message` says what failed, `cause` why.
    pub fn unavailable_by(
        message: impl Into<String>,
        cause: impl std::error::Error + Send + Sync + 'static,
    ) -> FetchError {
        FetchError::Unavailable(Detail::new(message, Some(Arc::new(cause))))
    }

    /// The user's input is wrong, for the reason `message` gives.
    pub fn bad_input(message: impl Into<String>) -> FetchError {
        FetchError::BadInput(Detail::new(message, None))
    }

    /// The user's input is wrong: `message` says which input, `cause` why.
    pub fn bad_input_by(
        message: impl Into<String>,
        cause: impl std::error::Error + Send + Sync + 'static,
    ) -> FetchError {
        FetchError::BadInput(Detail::new(message, Some(Arc::new(cause))))
    }
}

/// The error underneath a [`FetchError`] (an I/O, HTTP, TLS, JSON or credentials error),
/// shared so that the error stays `Clone` (the fetch cache hands one error to every waiter).
pub type Cause = Arc<dyn std::error::Error + Send + Sync + 'static>;

/// What a [`FetchError::Unavailable`] or [`FetchError::BadInput`] says: its own message and,
/// when there is one, the error that caused it (its `source()`). The message does not
/// repeat the cause: `error::one_line` joins them, the CLI prints one `caused by:` line
/// per cause.
#[derive(Debug, Clone)]
pub struct Detail {
    message: String,
    cause: Option<Cause>,
}

impl Detail {
    pub(crate) fn new(message: impl Into<String>, cause: Option<Cause>) -> Detail {
        Detail {
            message: message.into(),
            cause,
        }
    }

    /// The message without the cause.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The error behind the message, if any.
    pub fn cause(&self) -> Option<&Cause> {
        self.cause.as_ref()
    }

    /// The message and its causes on one line, joined with `": "` (as `error::one_line`
    /// does), for the graph's problems, which hold text.
    pub fn line(&self) -> String {
        let mut line = self.message.clone();
        let mut cause = std::error::Error::source(self);
        while let Some(c) = cause {
            line = format!("{line}: {c}");
            cause = c.source();
        }
        line
    }

    /// The same error with `note` appended to its message (the cause stays).
    pub(crate) fn noted(self, note: &str) -> Detail {
        Detail {
            message: format!("{}{note}", self.message),
            cause: self.cause,
        }
    }
}

impl From<String> for Detail {
    fn from(message: String) -> Detail {
        Detail::new(message, None)
    }
}

impl From<&str> for Detail {
    fn from(message: &str) -> Detail {
        Detail::new(message, None)
    }
}

impl std::fmt::Display for Detail {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Detail {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.cause
            .as_deref()
            .map(|c| c as &(dyn std::error::Error + 'static))
    }
}

/// A blob on local disk whose bytes hashed to its digest when they were read: a layout's own
/// file, or a registry blob spooled to a temporary file (deleted when this is dropped). Lets
/// `assemble` copy layers of any size in bounded memory.
pub struct BlobFile {
    /// Where the bytes are.
    pub path: std::path::PathBuf,
    /// How many bytes there are.
    pub size: u64,
    _spool: Option<tempfile::TempPath>,
}

impl BlobFile {
    pub(crate) fn new(
        path: std::path::PathBuf,
        size: u64,
        spool: Option<tempfile::TempPath>,
    ) -> BlobFile {
        BlobFile {
            path,
            size,
            _spool: spool,
        }
    }
}

/// A blob read piece by piece (`verify --deep` reads layers of any size this way). The source
/// does not check the pieces against the blob's digest: the reader hashes them as they pass.
pub struct BlobStream {
    /// The bytes in order; an error ends the stream (what was read so far is incomplete).
    pub chunks: BoxStream<'static, Result<bytes::Bytes, FetchError>>,
    /// When the run must be over (`--timeout`), if it has a deadline: work on the bytes
    /// (decompression) must end by then too.
    pub deadline: Option<Instant>,
}

impl BlobStream {
    /// A stream of bytes already in memory, with no deadline.
    pub fn from_bytes(bytes: Vec<u8>) -> BlobStream {
        BlobStream {
            chunks: Box::pin(futures::stream::iter([Ok(bytes.into())])),
            deadline: None,
        }
    }
}

/// A place that serves one image reference.
pub trait Source: Send + Sync {
    /// The reference as shown to users.
    fn name(&self) -> String;

    /// The digest the reference pins, if any.
    fn pinned(&self) -> Option<Digest>;

    /// Fetches the object the reference names.
    fn top(&self) -> impl Future<Output = Result<Fetched, FetchError>> + Send;

    /// Fetches a manifest (or nested index) by digest, at most `limit` bytes.
    fn manifest(
        &self,
        digest: &Digest,
        limit: u64,
    ) -> impl Future<Output = Result<Vec<u8>, FetchError>> + Send;

    /// Fetches a blob (config or layer) by digest, at most `limit` bytes.
    fn blob(
        &self,
        digest: &Digest,
        limit: u64,
    ) -> impl Future<Output = Result<Vec<u8>, FetchError>> + Send;

    /// True when every body [`Source::manifest`] and [`Source::blob`] return was checked
    /// against the digest asked for as it was read (bytes that do not hash to it are their
    /// `DigestMismatch` error, never their answer): the walk then checks only the size,
    /// rather than hashing each body a second time.
    fn checks_digests(&self) -> bool {
        false
    }

    /// Streams a blob (a layer) by digest, at most `limit` bytes, in bounded memory. The
    /// default reads it whole through [`Source::blob`]: sources of large blobs (layouts,
    /// registries) override it.
    fn blob_stream(
        &self,
        digest: &Digest,
        limit: u64,
    ) -> impl Future<Output = Result<BlobStream, FetchError>> + Send {
        async move { self.blob(digest, limit).await.map(BlobStream::from_bytes) }
    }
}

impl crate::error::Blame for FetchError {
    fn fault(&self) -> crate::error::Fault {
        use crate::error::Fault;
        match self {
            FetchError::BadInput(_) => Fault::Input,
            // The reference names nothing: asking again cannot fix it (rule `not-found`).
            FetchError::NotFound(_) => Fault::Policy,
            FetchError::DigestMismatch { .. }
            | FetchError::TooLarge { .. }
            | FetchError::Unavailable(_) => Fault::Unavailable,
        }
    }
}
