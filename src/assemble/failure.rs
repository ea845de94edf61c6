//! Why `assemble` refuses or stops: an [`AssembleRefusal`] (the list cannot be built from the
//! input; nothing is written) or a [`Failure`] of the push (a child that cannot be read or used,
//! a write or read-back that failed, a tag another push moved).

use std::sync::Arc;

use crate::digest::Digest;
use crate::reference::ReferenceError;
use crate::source::FetchError;

/// An input the list cannot be built from, with the input named. Always a usage/bad-input
/// error: nothing has been written when it is returned.
#[derive(Debug, Clone, thiserror::Error)]
pub enum AssembleRefusal {
    /// The input cannot make a list, as the message says.
    #[error("{0}")]
    Input(String),
    /// A `CHILD_REF` argument is not a reference.
    #[error("child '{input}'")]
    ChildReference {
        /// The argument as typed.
        input: String,
        /// Why it is not a reference.
        #[source]
        source: ReferenceError,
    },
    /// The `--target` argument is not a reference.
    #[error("--target")]
    TargetReference(#[source] ReferenceError),
    /// The list cannot be serialised.
    #[error("cannot serialise the index")]
    Serialise(#[source] Arc<serde_json::Error>),
}

/// Refuses the input, for the reason `msg` gives.
pub(super) fn refuse<T>(msg: impl Into<String>) -> Result<T, AssembleRefusal> {
    Err(AssembleRefusal::Input(msg.into()))
}

crate::error::input_errors!(AssembleRefusal);

/// Why assemble stopped. The first four are bad input ([`Fault::Input`](crate::error::Fault)),
/// raised before anything is written except for a child whose blobs turn out unreadable while
/// copying; the others mean a registry write or read-back failed
/// ([`Fault::Unavailable`](crate::error::Fault)). See [`crate::error::Blame`].
#[derive(Debug, Clone, thiserror::Error)]
pub enum Failure {
    /// The list cannot be built from the children.
    #[error(transparent)]
    Refused(#[from] AssembleRefusal),
    /// A child cannot be used, for the reason given.
    #[error("child {origin}: {reason}")]
    Child {
        /// The child as the user named it (`REF`, or `REF (entry N, DIGEST)`).
        origin: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A child, or one object of it, cannot be read: the user named something that cannot be
    /// used, whether it is absent, corrupt or on a registry that cannot be reached.
    #[error("child {origin}{}", object.as_ref().map(|o| format!(": {o}")).unwrap_or_default())]
    ChildUnreadable {
        /// The child as the user named it.
        origin: String,
        /// The object that could not be read (`manifest DIGEST`, `blob DIGEST`), if not the
        /// child itself.
        object: Option<String>,
        /// Why.
        #[source]
        source: ReadFailure,
    },
    /// A manifest's media type cannot be sent as a `Content-Type`.
    #[error("media type '{media_type}'")]
    MediaType {
        /// The media type.
        media_type: String,
        /// Why it is not a header value.
        #[source]
        source: Arc<http::header::InvalidHeaderValue>,
    },
    /// A write to the target repository failed.
    #[error("{target}: cannot {action}")]
    Write {
        /// The target, as given.
        target: String,
        /// What was being done (`upload blob DIGEST`, `push manifest REF`, …).
        action: String,
        /// The registry client's error (after its retries).
        #[source]
        source: FetchError,
    },
    /// The session cannot write to registries (it was made without the target).
    #[error("{target}: no registry client")]
    NoRegistryClient {
        /// The target, as given.
        target: String,
    },
    /// The pushed manifest (a list or an image) cannot be read back; the tag was not moved to it.
    #[error("{pushed}: cannot read the pushed manifest back")]
    ReadBack {
        /// What was pushed: `TARGET@DIGEST` (or the tag just moved).
        pushed: String,
        /// Why.
        #[source]
        source: FetchError,
    },
    /// The target tag names another list than the one pushed.
    #[error("{target} now names {now}, not the pushed {pushed}: another push replaced it")]
    Replaced {
        /// The target, as given.
        target: String,
        /// What the tag names now.
        now: Digest,
        /// What was pushed.
        pushed: Digest,
    },
}

/// Why a child's object could not be read.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ReadFailure {
    /// The source could not deliver it.
    #[error(transparent)]
    Fetch(#[from] FetchError),
    /// Its descriptor does not hold a usable digest.
    #[error(transparent)]
    Descriptor(#[from] crate::manifest::ManifestError),
    /// Its local copy cannot be opened.
    #[error(transparent)]
    File(Arc<std::io::Error>),
}

/// A child that cannot be used, for the reason given.
pub(super) fn unusable(origin: &str, reason: impl Into<String>) -> Failure {
    Failure::Child {
        origin: origin.to_string(),
        reason: reason.into(),
    }
}

/// A child (`object` `None`) or one of its objects that cannot be read. Every such failure is
/// the child's problem (bad input), whether it is absent, corrupt or on a registry that cannot be
/// reached.
pub(super) fn unreadable(
    origin: &str,
    object: Option<String>,
    why: impl Into<ReadFailure>,
) -> Failure {
    Failure::ChildUnreadable {
        origin: origin.to_string(),
        object,
        source: why.into(),
    }
}
impl crate::error::Blame for Failure {
    fn fault(&self) -> crate::error::Fault {
        use crate::error::Fault;
        match self {
            Failure::Refused(_)
            | Failure::Child { .. }
            | Failure::ChildUnreadable { .. }
            | Failure::MediaType { .. } => Fault::Input,
            Failure::Write { .. }
            | Failure::NoRegistryClient { .. }
            | Failure::ReadBack { .. }
            | Failure::Replaced { .. } => Fault::Unavailable,
        }
    }
}
