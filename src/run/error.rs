//! Why a run ended without (all of) its reports.

use crate::cluster::{manifests::ManifestsError, nodes::NodesError, release::ReleaseError};
use crate::error::{Blame, Fault};
use crate::input::InputError;
use crate::mirror::{check::TargetError, config::MirrorConfigError};
use crate::policy::PolicyError;
use crate::reference::ReferenceError;

/// Why a run could not produce its reports. Every one but a release that cannot be read is
/// the user's input ([`Blame`]).
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// Several inputs were to be read from standard input (the flags, comma-separated).
    #[error("{0}: only one input can be read from standard input ('-'); write the others to files")]
    StdinTwice(String),
    /// The policy cannot be loaded.
    #[error(transparent)]
    Policy(#[from] PolicyError),
    /// The node list (`--nodes`) cannot be used.
    #[error(transparent)]
    Nodes(#[from] NodesError),
    /// A reference does not parse.
    #[error(transparent)]
    Reference(#[from] ReferenceError),
    /// An input cannot be used: a reference list, an ImageSet, what a reference names.
    #[error(transparent)]
    Input(#[from] InputError),
    /// The pod templates (`--from-manifests`) cannot be read.
    #[error(transparent)]
    Manifests(#[from] ManifestsError),
    /// A release is given without components, under a policy naming none.
    #[error(
        "--from-release: policy '{0}' names no release components (release.components): name them with --release-image NAME"
    )]
    NoReleaseComponents(String),
    /// The release (`--from-release`) cannot be read.
    #[error(transparent)]
    Release(#[from] ReleaseError),
    /// `--timeout` passed while the inputs were read (`what`: the one being read) or merged
    /// into one target per image.
    #[error("--timeout {}s passed while {what}: stopped", .limit.as_secs_f64())]
    Timeout {
        /// What was being done (escaped for a terminal).
        what: String,
        /// The `--timeout`.
        limit: std::time::Duration,
    },
    /// The mirror configuration cannot be used.
    #[error(transparent)]
    MirrorConfig(#[from] MirrorConfigError),
    /// A reference cannot be checked against the mirror configuration.
    #[error(transparent)]
    MirrorTarget(#[from] TargetError),
    /// The mirror gate was given no mirror configuration and not told to check before
    /// mirroring.
    #[error(
        "mirror-check needs --idms, --icsp, --registries-conf or --hosts-dir (or --pre for a plain verify)"
    )]
    NoMirrorConfig,
    /// The upgrade gate cannot know the runtime after the upgrade (`--upgrade`,
    /// `--upgrade-to`): what is wrong, naming the flag and the version.
    #[error("{0}")]
    Upgrade(String),
    /// The inputs name no image.
    #[error("no references given (REF..., --from-file or --from-imageset)")]
    NoReferences,
    /// A report could not be handed on: the run's `ReportSink` failed (standard
    /// output cannot be written).
    #[error("cannot write the report")]
    Output(#[source] std::io::Error),
}

impl Blame for RunError {
    fn fault(&self) -> Fault {
        match self {
            RunError::Policy(e) => e.fault(),
            RunError::Nodes(e) => e.fault(),
            RunError::Reference(e) => e.fault(),
            RunError::Input(e) => e.fault(),
            RunError::Manifests(e) => e.fault(),
            RunError::Release(e) => e.fault(),
            RunError::MirrorConfig(e) => e.fault(),
            RunError::MirrorTarget(e) => e.fault(),
            RunError::StdinTwice(_)
            | RunError::NoReleaseComponents(_)
            | RunError::NoReferences
            | RunError::Upgrade(_)
            | RunError::NoMirrorConfig => Fault::Input,
            RunError::Timeout { .. } => Fault::Unavailable,
            RunError::Output(_) => Fault::Output,
        }
    }
}
