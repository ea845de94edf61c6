//! What happened to one image of a run: its report, or bad input that ends the run.

use crate::engine::ImageReport;
use crate::input::InputError;
use crate::reference::ImageRef;
use crate::source::FetchError;

/// What happened to one reference.
#[derive(Debug)]
pub enum Outcome {
    /// It was judged (or could not be fetched: an `error` verdict).
    Report(ImageReport),
    /// The user's input is wrong (e.g. not an OCI layout): ends the run as bad input
    /// ([`crate::error::Fault::Input`]).
    BadInput(InputError),
}

impl Outcome {
    /// The outcome for a reference whose graph could not be fetched: bad input ends the run,
    /// a tag or repository that does not exist is that image's `fail` verdict (`not-found`:
    /// retrying cannot fix it), anything else is its `error` verdict.
    pub fn fetch_failed(reference: &ImageRef, error: FetchError) -> Outcome {
        match error {
            e @ FetchError::BadInput(_) => Outcome::BadInput(e.into()),
            e @ FetchError::NotFound(_) => Outcome::Report(ImageReport::not_found(
                &reference.to_string(),
                &crate::error::one_line(&e),
            )),
            e => Outcome::Report(ImageReport::unavailable(
                &reference.to_string(),
                &crate::error::one_line(&e),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fetch error's cause reaches the outcome's text: the finding, or the bad input.
    #[test]
    fn fetch_failures_carry_their_causes() {
        let r: ImageRef = "q.io/a/b:v1".parse().unwrap();
        let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        let e = FetchError::unavailable_by("manifest q.io/a/b:v1", refused);
        let Outcome::Report(report) = Outcome::fetch_failed(&r, e) else {
            panic!("an unavailable source is the image's error verdict");
        };
        let message = &report.findings[0].message;
        assert_eq!(message, "manifest q.io/a/b:v1: connection refused");
        let denied = std::io::Error::from(std::io::ErrorKind::PermissionDenied);
        let e = FetchError::bad_input_by("oci:x: blob sha256:a: cannot open", denied);
        let Outcome::BadInput(m) = Outcome::fetch_failed(&r, e) else {
            panic!("bad input ends the run");
        };
        assert_eq!(
            crate::error::one_line(&m),
            "oci:x: blob sha256:a: cannot open: permission denied"
        );
    }
}
