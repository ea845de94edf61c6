//! The one shape of a user's input that cannot be used: which input, what is wrong with it,
//! and the error behind it.

use std::sync::Arc;

use crate::source::{Cause, FetchError};

/// A user's input that cannot be used (a reference list, an ImageSet, a layout a reference
/// names, a flag): which input, what is wrong, and the error behind it, if another library
/// reported it. Always the user's to fix ([`crate::error::Fault::Input`]); the command line
/// prints the cause on `caused by:` lines.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{}{reason}", origin.as_deref().map(|o| format!("{o}: ")).unwrap_or_default())]
pub struct InputError {
    /// Which input: `FILE`, `FILE:LINE`, `-` for standard input, a flag; `None` when the
    /// reason names it itself (a layout's own message).
    pub origin: Option<String>,
    /// What is wrong.
    pub reason: String,
    /// The error behind it.
    #[source]
    pub source: Option<Cause>,
}

impl InputError {
    /// `origin` cannot be used because of `reason`.
    pub fn new(origin: impl Into<String>, reason: impl Into<String>) -> InputError {
        InputError {
            origin: Some(origin.into()),
            reason: reason.into(),
            source: None,
        }
    }

    /// The same error, caused by `cause`.
    pub fn caused_by(
        mut self,
        cause: impl std::error::Error + Send + Sync + 'static,
    ) -> InputError {
        self.source = Some(Arc::new(cause));
        self
    }
}

/// A fetch that failed on the user's input (a layout that is not one, a path escaping it):
/// its message is the reason (it names the input), its cause the source.
impl From<FetchError> for InputError {
    fn from(error: FetchError) -> InputError {
        let (reason, source) = match error {
            FetchError::BadInput(d) | FetchError::Unavailable(d) => {
                (d.message().to_string(), d.cause().cloned())
            }
            other => (other.to_string(), None),
        };
        InputError {
            origin: None,
            reason,
            source,
        }
    }
}

crate::error::input_errors!(InputError);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_input_comes_first_and_the_cause_stays_a_cause() {
        let denied = std::io::Error::from(std::io::ErrorKind::PermissionDenied);
        let e = InputError::new("refs.txt", "cannot read").caused_by(denied);
        assert_eq!(e.to_string(), "refs.txt: cannot read");
        assert_eq!(
            crate::error::one_line(&e),
            "refs.txt: cannot read: permission denied"
        );
        let denied = std::io::Error::from(std::io::ErrorKind::PermissionDenied);
        let fetch = FetchError::bad_input_by("oci:x: blob sha256:a: cannot open", denied);
        let e = InputError::from(fetch);
        assert_eq!(e.to_string(), "oci:x: blob sha256:a: cannot open");
        assert_eq!(
            crate::error::one_line(&e),
            "oci:x: blob sha256:a: cannot open: permission denied"
        );
    }
}
