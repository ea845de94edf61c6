//! One exit model for every command: an [`ExitKind`], and the single place where each of the
//! library's error types is mapped to one.
//!
//! The four kinds are the contract scripts and pipelines rely on (README "Exit codes"):
//! a verdict (pass, fail), the user's input (usage), or the world (incomplete: network,
//! registry, a tool that is missing). Add a mapping here when a new error type appears, so
//! the answer to "which exit code does this give?" is always in this file.

use crate::engine::Verdict;

/// How a command ended, as scripts see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ExitKind {
    /// Every image passes (warnings allowed): exit 0.
    Pass,
    /// At least one image fails its policy: exit 1.
    Fail,
    /// Usage error or bad input (reference, policy, plan, mirror configuration): exit 2.
    Usage,
    /// A check could not be completed (network, registry, a tool that failed): exit 3.
    Incomplete,
}

impl ExitKind {
    /// The process exit code.
    pub fn code(self) -> u8 {
        match self {
            ExitKind::Pass => 0,
            ExitKind::Fail => 1,
            ExitKind::Usage => 2,
            ExitKind::Incomplete => 3,
        }
    }

    /// The kind of a whole batch of verdicts: `Fail` if any image fails (it takes precedence:
    /// retrying cannot fix it), else `Incomplete` if any could not be checked, else `Pass`.
    pub fn of_verdicts(verdicts: impl IntoIterator<Item = Verdict>) -> ExitKind {
        let mut kind = ExitKind::Pass;
        for v in verdicts {
            match v {
                Verdict::Fail => return ExitKind::Fail,
                Verdict::Error => kind = ExitKind::Incomplete,
                Verdict::Pass => {}
            }
        }
        kind
    }
}

impl From<Verdict> for ExitKind {
    fn from(v: Verdict) -> ExitKind {
        ExitKind::of_verdicts([v])
    }
}

/// Errors that end a command: each maps to the exit kind it means. The implementations below
/// are the whole mapping; keep them together.
pub trait Classify {
    /// The exit kind this error ends a command with.
    fn exit_kind(&self) -> ExitKind;
}

/// Errors that are always the user's input.
macro_rules! usage_errors {
    ($($t:ty),* $(,)?) => {
        $(impl Classify for $t {
            fn exit_kind(&self) -> ExitKind {
                ExitKind::Usage
            }
        })*
    };
}

usage_errors!(
    crate::reference::ReferenceError,
    crate::policy::PolicyError,
    crate::platform::PlatformError,
    crate::cluster::nodes::NodesError,
    crate::cluster::manifests::ManifestsError,
    crate::auth::AuthError,
    crate::batch::ListError,
    crate::assemble::Refusal,
    crate::build::plan::PlanError,
    crate::build::jobs::JobsError,
    crate::mirror::config::ConfigError,
    crate::mirror::resolve::ResolveError,
    crate::mirror::check::TargetError,
);

impl Classify for crate::source::FetchError {
    fn exit_kind(&self) -> ExitKind {
        use crate::source::FetchError;
        match self {
            FetchError::BadInput(_) => ExitKind::Usage,
            // The reference names nothing: asking again cannot fix it (rule `not-found`).
            FetchError::NotFound(_) => ExitKind::Fail,
            FetchError::DigestMismatch { .. }
            | FetchError::TooLarge { .. }
            | FetchError::Unavailable(_) => ExitKind::Incomplete,
        }
    }
}

impl Classify for crate::cluster::release::ReleaseError {
    fn exit_kind(&self) -> ExitKind {
        use crate::cluster::release::ReleaseErrorKind;
        match self.kind {
            // A release tag or repository that does not exist is the user's reference, not
            // a verdict on an image: bad input, like a release image that is not one.
            ReleaseErrorKind::NotARelease | ReleaseErrorKind::NotFound => ExitKind::Usage,
            ReleaseErrorKind::Unavailable => ExitKind::Incomplete,
        }
    }
}

impl Classify for crate::push::Failure {
    fn exit_kind(&self) -> ExitKind {
        use crate::push::Failure;
        match self {
            Failure::Refused(_)
            | Failure::Child { .. }
            | Failure::ChildUnreadable { .. }
            | Failure::MediaType { .. } => ExitKind::Usage,
            Failure::Write { .. }
            | Failure::NoRegistryClient { .. }
            | Failure::ReadBack { .. }
            | Failure::Replaced { .. } => ExitKind::Incomplete,
        }
    }
}

impl Classify for crate::build::error::RunError {
    fn exit_kind(&self) -> ExitKind {
        use crate::build::error::RunError;
        match self {
            RunError::PushToLayout(_)
            | RunError::PushReference(_)
            | RunError::NotComposable { .. }
            | RunError::StageFile(..) => ExitKind::Usage,
            RunError::BuildahMissing
            | RunError::BuildahUnrunnable(_)
            | RunError::BuildahFailed { .. }
            | RunError::BuildahVersionUnreadable { .. }
            | RunError::LogDir { .. } => ExitKind::Incomplete,
        }
    }
}

impl Classify for crate::build::BuildError {
    fn exit_kind(&self) -> ExitKind {
        match self {
            crate::build::BuildError::Run(e) => e.exit_kind(),
            _ => ExitKind::Usage,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_the_documented_ones() {
        let table = [
            (ExitKind::Pass, 0),
            (ExitKind::Fail, 1),
            (ExitKind::Usage, 2),
            (ExitKind::Incomplete, 3),
        ];
        for (kind, code) in table {
            assert_eq!(kind.code(), code, "{kind:?}");
        }
    }

    #[test]
    fn fetch_errors_say_whose_fault_they_are() {
        use crate::source::FetchError;
        let table = [
            (FetchError::BadInput("not a layout".into()), ExitKind::Usage),
            (FetchError::NotFound("tag v9".into()), ExitKind::Fail),
            (
                FetchError::Unavailable("reset".into()),
                ExitKind::Incomplete,
            ),
            (
                FetchError::TooLarge {
                    what: "manifest".into(),
                    limit: 1,
                },
                ExitKind::Incomplete,
            ),
        ];
        for (error, want) in table {
            assert_eq!(error.exit_kind(), want, "{error}");
        }
    }

    #[test]
    fn a_failing_image_outranks_one_that_could_not_be_checked() {
        use Verdict::*;
        let table: [(&[Verdict], ExitKind); 5] = [
            (&[], ExitKind::Pass),
            (&[Pass], ExitKind::Pass),
            (&[Pass, Error], ExitKind::Incomplete),
            (&[Error, Fail, Pass], ExitKind::Fail),
            (&[Fail, Error], ExitKind::Fail),
        ];
        for (verdicts, want) in table {
            assert_eq!(
                ExitKind::of_verdicts(verdicts.iter().copied()),
                want,
                "{verdicts:?}"
            );
        }
    }
}
