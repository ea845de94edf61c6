//! The command line's error: every library error a command can end with, and the few the
//! command line finds itself. Whose fault it is comes from [`Blame`]: each library error keeps
//! the fault the library gives it. `output::print_error` writes it the way cargo and uv do.

use std::path::PathBuf;

use imgcheck::error::{Blame, Fault};
use imgcheck::graph::Problem;
use imgcheck::input::InputError;
use imgcheck::run::RunError;
use imgcheck::{assemble, auth, cluster, platform, policy, reference, source};

/// Why a command ended without its normal output.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// A reference does not parse.
    #[error(transparent)]
    Reference(#[from] reference::ReferenceError),
    /// The policy cannot be loaded.
    #[error(transparent)]
    Policy(#[from] policy::PolicyError),
    /// `--nodes` is not a usable node list.
    #[error(transparent)]
    Nodes(#[from] cluster::nodes::NodesError),
    /// A run (`verify`, `mirror-check`) cannot gather or check its images.
    #[error(transparent)]
    Run(#[from] RunError),
    /// `--platform` is not a platform.
    #[error(transparent)]
    Platform(#[from] platform::PlatformError),
    /// Credentials cannot be loaded.
    #[error(transparent)]
    Auth(#[from] auth::AuthError),
    /// `assemble`'s arguments cannot make a list.
    #[error(transparent)]
    Refusal(#[from] assemble::AssembleRefusal),
    /// A reference cannot be fetched.
    #[error(transparent)]
    Fetch(#[from] source::FetchError),
    /// `assemble` stopped.
    #[error(transparent)]
    Push(#[from] assemble::Failure),
    /// An input is wrong (`resolve --runtime` for a Windows node).
    #[error(transparent)]
    BadInput(InputError),
    /// `--cert-dir` is not a directory.
    #[error("--cert-dir {}: not a directory", .0.display())]
    CertDir(PathBuf),
    /// `mirror-check --plan --format konflux` (or `junit`): a plan checks nothing, so it has
    /// no test result (a TEST_OUTPUT or a JUnit report is a check's verdict); the format and
    /// what it would have held.
    #[error(
        "mirror-check --plan --format {0}: a plan checks nothing, so it has no {1}; print the \
         plan with --format text or json, or check the mirrors without --plan"
    )]
    VerdictOfPlan(&'static str, &'static str),
    /// `mirror-check --pre|--plan` with a mirror configuration and a signature policy: the
    /// nodes pull from the mirror, where CRI-O reads the signatures, and the run reads no
    /// mirror; the flag that reads none.
    #[error(
        "mirror-check {0} --signature-policy: with a mirror configuration the Linux nodes pull \
         from the mirror and CRI-O reads the signatures there, which {0} does not read; predict \
         the signature policy after mirroring (mirror-check without {0}), or on the sources with \
         verify --signature-policy"
    )]
    SignaturePolicyUnread(&'static str),
    /// `resolve`: no entry matches the host (`host` is `os/arch [os.version]`).
    #[error("no matching manifest for {host} in the manifest list entries{why}")]
    NoMatch {
        /// The host.
        host: String,
        /// ` (problem)` when the reference itself is unusable, else empty.
        why: String,
    },
    /// `resolve`: the host selects an entry it cannot pull.
    #[error("{host} selects {digest}, but the pull would fail: {problem}")]
    PullWouldFail {
        /// The host.
        host: String,
        /// The selected entry.
        digest: String,
        /// What is wrong with it.
        problem: Problem,
    },
    /// Standard output cannot be written (other than a reader that went away, which is not
    /// an error: `cli::output`).
    #[error("cannot write to standard output")]
    Stdout(#[source] std::io::Error),
    /// `assemble`: the pushed list fails its policy.
    #[error("{pushed} fails policy '{policy}'; {}", tag_note(*tag))]
    PushedFails {
        /// `TARGET@DIGEST`.
        pushed: String,
        /// The policy's name.
        policy: String,
        /// What became of the tag.
        tag: assemble::Tag,
    },
    /// `assemble`: the pushed list could not be fully verified.
    #[error("{pushed} could not be fully verified; {}", tag_note(*tag))]
    PushedUnverified {
        /// `TARGET@DIGEST`.
        pushed: String,
        /// What became of the tag.
        tag: assemble::Tag,
    },
    /// `build` stopped before it had results for every image.
    #[error(transparent)]
    Build(#[from] imgcheck::builder::BuildError),
    /// `man --dir`: the pages cannot be written there.
    #[error("man --dir {}: cannot write the manual pages", .dir.display())]
    ManDir {
        /// `--dir` as given.
        dir: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The async runtime cannot start.
    #[error("error: cannot start the async runtime")]
    Runtime(#[source] std::io::Error),
}

impl Blame for CliError {
    fn fault(&self) -> Fault {
        match self {
            CliError::Reference(e) => e.fault(),
            CliError::Policy(e) => e.fault(),
            CliError::Platform(e) => e.fault(),
            CliError::Nodes(e) => e.fault(),
            CliError::Run(e) => e.fault(),
            CliError::BadInput(e) => e.fault(),
            CliError::Auth(e) => e.fault(),
            CliError::Refusal(e) => e.fault(),
            CliError::Fetch(e) => e.fault(),
            CliError::Push(e) => e.fault(),
            CliError::CertDir(_)
            | CliError::VerdictOfPlan(..)
            | CliError::SignaturePolicyUnread(_)
            | CliError::ManDir { .. } => Fault::Input,
            CliError::NoMatch { .. }
            | CliError::PullWouldFail { .. }
            | CliError::PushedFails { .. } => Fault::Policy,
            CliError::Stdout(_) => Fault::Output,
            CliError::PushedUnverified { .. } | CliError::Runtime(_) => Fault::Unavailable,
            CliError::Build(e) => e.fault(),
        }
    }
}

/// What became of the tag, for the messages of a list that did not pass.
fn tag_note(tag: assemble::Tag) -> &'static str {
    match tag {
        assemble::Tag::Forced => "--force moved the tag to it anyway",
        assemble::Tag::Moved | assemble::Tag::Held => {
            "it is in the repository by digest only and the tag was left as it was: fix the \
             children and run assemble again, or pass --force to move the tag anyway"
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::exit::ExitKind;
    use std::error::Error as _;

    #[test]
    fn each_error_ends_with_its_kind() {
        let fetch = |e| CliError::Fetch(e);
        let table: [(CliError, ExitKind); 9] = [
            (CliError::Run(RunError::NoReferences), ExitKind::Usage),
            (
                CliError::VerdictOfPlan("junit", "test result"),
                ExitKind::Usage,
            ),
            (
                CliError::Run(RunError::NoReleaseComponents("linux-only".into())),
                ExitKind::Usage,
            ),
            (
                CliError::Run(RunError::StdinTwice("--nodes, --from-file".into())),
                ExitKind::Usage,
            ),
            (
                fetch(source::FetchError::BadInput("not a layout".into())),
                ExitKind::Usage,
            ),
            (
                fetch(source::FetchError::Unavailable("reset".into())),
                ExitKind::Incomplete,
            ),
            (
                CliError::NoMatch {
                    host: "linux/amd64".into(),
                    why: String::new(),
                },
                ExitKind::Fail,
            ),
            (
                CliError::PushedUnverified {
                    pushed: "r@d".into(),
                    tag: assemble::Tag::Forced,
                },
                ExitKind::Incomplete,
            ),
            (
                CliError::Build(imgcheck::builder::BuildError::Check { errors: 2 }),
                ExitKind::Usage,
            ),
        ];
        for (error, want) in table {
            assert_eq!(ExitKind::of_error(&error), want, "{error}");
        }
    }

    #[test]
    fn a_failure_after_the_push_by_digest_keeps_its_causes() {
        let error = CliError::from(assemble::Failure::ReadBack {
            pushed: "127.0.0.1:5000/app:v1@sha256:ab".into(),
            source: source::FetchError::Unavailable("connection reset".into()),
        });
        assert_eq!(
            error.to_string(),
            "127.0.0.1:5000/app:v1@sha256:ab: cannot read the pushed manifest back"
        );
        assert_eq!(error.source().unwrap().to_string(), "connection reset");
        assert_eq!(ExitKind::of_error(&error), ExitKind::Incomplete);
        let held = CliError::PushedFails {
            pushed: "r@d".into(),
            policy: "p".into(),
            tag: assemble::Tag::Held,
        };
        assert!(
            held.to_string().contains("the tag was left as it was"),
            "{held}"
        );
        assert_eq!(ExitKind::of_error(&held), ExitKind::Fail);
    }
}
