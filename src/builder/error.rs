//! Why a build stops: the whole command ([`BuildError`]), the run as a whole ([`BuildRunError`]),
//! one job ([`JobError`]) and one step of an image ([`StepError`]). Each keeps its cause as
//! its `source`; [`crate::error::one_line`] writes an error and its causes on one line for the
//! build table and the failure lines.

use std::path::PathBuf;
use std::sync::Arc;

use crate::assemble::Failure;
use crate::auth::AuthError;
use crate::builder::base::BaseError;
use crate::builder::jobs::JobsError;
use crate::builder::plan::PlanError;
use crate::builder::stage_image::StageError;
use crate::error::{Blame, Fault};
use crate::reference::ReferenceError;

/// Why `imgcheck build` stopped before it had results for every image.
#[derive(Debug, Clone, thiserror::Error)]
pub enum BuildError {
    /// The plan cannot be read or selected from.
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// `--check` finds errors in the plan (they are printed before).
    #[error("the plan has {errors} error(s); see `imgcheck build --check`")]
    Check {
        /// How many.
        errors: usize,
    },
    /// The jobs cannot be made from the plan.
    #[error(transparent)]
    Jobs(#[from] JobsError),
    /// imgcheck's own credentials cannot be loaded.
    #[error(transparent)]
    Auth(#[from] AuthError),
    /// The run could not start or finish.
    #[error(transparent)]
    Run(#[from] BuildRunError),
}

/// Why a run could not start or finish as a whole.
#[derive(Debug, Clone, thiserror::Error)]
pub enum BuildRunError {
    /// There is no `buildah` on the PATH.
    #[error(
        "buildah not found: install it (Debian/Ubuntu: apt-get install buildah; \
         Fedora/RHEL: dnf install buildah)"
    )]
    BuildahMissing,
    /// `buildah version` cannot be started.
    #[error("cannot run buildah version")]
    BuildahUnrunnable(#[source] Arc<std::io::Error>),
    /// `buildah version` exits with an error.
    #[error("buildah version failed ({status}): {stderr}")]
    BuildahFailed {
        /// Its exit status.
        status: std::process::ExitStatus,
        /// What it wrote on standard error, trimmed.
        stderr: String,
    },
    /// `buildah version` prints no version imgcheck can read.
    #[error("cannot read the version from `buildah version`: {output}")]
    BuildahVersionUnreadable {
        /// Its output, trimmed.
        output: String,
    },
    /// The log directory cannot be created.
    #[error("cannot create the log directory {}", .dir.display())]
    LogDir {
        /// The directory.
        dir: PathBuf,
        /// Why.
        #[source]
        source: Arc<std::io::Error>,
    },
    /// A per-platform push destination is an OCI layout.
    #[error("{0}: --push needs a registry (REGISTRY/NAMESPACE), not an OCI layout")]
    PushToLayout(String),
    /// A per-platform push destination does not parse.
    #[error("--push")]
    PushReference(#[source] Arc<ReferenceError>),
    /// `--windows-stage compose`, but a Windows stage cannot be composed.
    #[error("--windows-stage compose: {image} {target}: {reason}")]
    NotComposable {
        /// The image.
        image: String,
        /// The target (`windows/amd64 20348`).
        target: String,
        /// Why not.
        reason: String,
    },
    /// The Containerfile of a Windows stage cannot be read, or its files stage written.
    #[error("{}", .0.display())]
    StageFile(PathBuf, #[source] Arc<std::io::Error>),
}

/// Why a step for one image (its Windows base, its list) stopped.
#[derive(Debug, Clone, thiserror::Error)]
pub enum StepError {
    /// A Windows base cannot be used.
    #[error(transparent)]
    Base(#[from] BaseError),
    /// The list cannot be assembled or pushed.
    #[error(transparent)]
    Assemble(#[from] Arc<Failure>),
    /// The layers of a Windows stage cannot be written in the Windows format.
    #[error("writing the Windows layers")]
    Windows(#[source] Arc<StageError>),
}

impl StepError {
    /// Whether the step could not be completed (network, registry) rather than the image
    /// being wrong.
    pub fn is_unavailable(&self) -> bool {
        match self {
            StepError::Base(e) => e.is_unavailable(),
            StepError::Assemble(f) => f.fault() == Fault::Unavailable,
            StepError::Windows(e) => e.is_unavailable(),
        }
    }
}

/// Why a pushed list could not be verified.
#[derive(Debug, Clone, thiserror::Error)]
#[error("cannot verify {list}")]
pub struct VerifyError {
    /// The list, by digest.
    pub list: String,
    /// Why it could not be read.
    #[source]
    pub source: Arc<crate::source::FetchError>,
}

/// Why a job did not produce an image.
#[derive(Debug, Clone, thiserror::Error)]
pub enum JobError {
    /// Nothing to run.
    #[error("empty command")]
    EmptyCommand,
    /// The log file cannot be created.
    #[error("cannot create {}", .0.display())]
    CreateLog(PathBuf, #[source] Arc<std::io::Error>),
    /// The log file cannot be written.
    #[error("cannot write the log")]
    WriteLog(#[source] Arc<std::io::Error>),
    /// A program cannot be started.
    #[error("cannot start {0}")]
    Start(String, #[source] Arc<std::io::Error>),
    /// A program's end cannot be waited for.
    #[error("{0} did not finish")]
    Wait(String, #[source] Arc<std::io::Error>),
    /// `buildah build` exits with an error.
    #[error("buildah build failed")]
    Build,
    /// The image-ID file `buildah build` writes cannot be read.
    #[error("cannot read {}", .0.display())]
    ImageId(PathBuf, #[source] Arc<std::io::Error>),
    /// `buildah push` exits with an error.
    #[error("buildah push to {0} failed")]
    Push(String),
    /// The digest file `buildah push` writes cannot be read.
    #[error("cannot read {}", .0.display())]
    DigestFile(PathBuf, #[source] Arc<std::io::Error>),
    /// The digest file does not hold a digest.
    #[error("buildah push wrote an unreadable digest '{0}'")]
    Digest(String, #[source] crate::digest::DigestError),
    /// The task running the job ended abnormally (panicked or was cancelled).
    #[error("the build task ended abnormally")]
    Task(#[source] Arc<tokio::task::JoinError>),
    /// It was stopped because another build of the same image failed.
    #[error("stopped: another build of this image failed")]
    Stopped,
}

impl JobError {
    /// Whether the image was built and only its push failed (registry, network,
    /// credentials): the run could not be completed rather than the image being bad.
    pub fn after_build(&self) -> bool {
        matches!(self, JobError::Push(_) | JobError::DigestFile(..))
    }
}

impl Blame for BuildError {
    fn fault(&self) -> Fault {
        match self {
            BuildError::Run(e) => e.fault(),
            _ => Fault::Input,
        }
    }
}

impl Blame for BuildRunError {
    fn fault(&self) -> Fault {
        match self {
            BuildRunError::PushToLayout(_)
            | BuildRunError::PushReference(_)
            | BuildRunError::NotComposable { .. }
            | BuildRunError::StageFile(..) => Fault::Input,
            BuildRunError::BuildahMissing
            | BuildRunError::BuildahUnrunnable(_)
            | BuildRunError::BuildahFailed { .. }
            | BuildRunError::BuildahVersionUnreadable { .. }
            | BuildRunError::LogDir { .. } => Fault::Unavailable,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::one_line;

    #[test]
    fn a_job_error_is_shown_with_its_causes_and_knows_a_failed_push() {
        let gone = || Arc::new(std::io::Error::from(std::io::ErrorKind::NotFound));
        let cases = [
            (JobError::Build, "buildah build failed", false),
            (
                JobError::ImageId("/l/x.iid".into(), gone()),
                "cannot read /l/x.iid: entity not found",
                false,
            ),
            (
                JobError::Push("r/x:v1".into()),
                "buildah push to r/x:v1 failed",
                true,
            ),
            (
                JobError::DigestFile("/l/x.digest".into(), gone()),
                "cannot read /l/x.digest: entity not found",
                true,
            ),
        ];
        for (error, shown, after_build) in cases {
            assert_eq!(one_line(&error), shown);
            assert_eq!(error.after_build(), after_build, "{shown}");
        }
    }
}
