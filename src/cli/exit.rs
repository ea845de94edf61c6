//! One exit model for every command: an [`ExitKind`], the one place where the library's
//! answers ([`Fault`] of an error, [`Verdict`] of a run) become exit codes.
//!
//! The four kinds are the contract scripts and pipelines rely on (README "Exit codes"):
//! a verdict (pass, fail), the user's input (usage), or the world (incomplete: network,
//! registry, a tool that is missing, an output that cannot be written).

use imgcheck::engine::Verdict;
use imgcheck::error::{Blame, Fault};

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

    /// The exit kind an error ends a command with.
    pub fn of_error(error: &impl Blame) -> ExitKind {
        error.fault().into()
    }
}

impl From<Verdict> for ExitKind {
    fn from(v: Verdict) -> ExitKind {
        match v {
            Verdict::Pass => ExitKind::Pass,
            Verdict::Error => ExitKind::Incomplete,
            Verdict::Fail => ExitKind::Fail,
        }
    }
}

impl From<Fault> for ExitKind {
    fn from(f: Fault) -> ExitKind {
        match f {
            Fault::Input => ExitKind::Usage,
            Fault::Policy => ExitKind::Fail,
            Fault::Unavailable | Fault::Output => ExitKind::Incomplete,
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
    fn each_fault_has_its_kind() {
        let table = [
            (Fault::Input, ExitKind::Usage),
            (Fault::Policy, ExitKind::Fail),
            (Fault::Unavailable, ExitKind::Incomplete),
            (Fault::Output, ExitKind::Incomplete),
        ];
        for (fault, want) in table {
            assert_eq!(ExitKind::from(fault), want, "{fault:?}");
        }
    }

    #[test]
    fn fetch_errors_say_whose_fault_they_are() {
        use imgcheck::source::FetchError;
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
            assert_eq!(ExitKind::of_error(&error), want, "{error}");
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
            let overall = verdicts.iter().copied().max().unwrap_or(Pass);
            assert_eq!(ExitKind::from(overall), want, "{verdicts:?}");
        }
    }
}
