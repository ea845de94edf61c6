//! How a run ended: per job, per image, and as an exit kind.

use crate::builder::error::JobError;
use crate::digest::Digest;
use crate::engine::{ImageReport, Verdict};

/// The end of one job.
#[derive(Debug, Clone)]
pub enum JobOutcome {
    /// Built and pushed: the digest of the per-platform image (for a composed Windows stage,
    /// of its files image in the job's local layout).
    Pushed(Digest),
    /// It failed.
    Failed {
        /// What failed.
        error: JobError,
        /// Last lines of the log.
        tail: String,
    },
    /// Not run, or stopped, because another build of the same image failed.
    Skipped,
}

/// How one image of the plan ended.
#[derive(Debug, Clone)]
pub enum ImageOutcome {
    /// Its list was pushed and verified.
    Verified {
        /// The list's digest.
        digest: Digest,
        /// The verify report.
        report: Box<ImageReport>,
    },
    /// A build (or push) of it failed: what failed, with the causes.
    BuildFailed(Vec<String>),
    /// Its list could not be assembled, pushed or verified: what, with the causes.
    Incomplete(String),
}

/// One row of the final table.
#[derive(Debug, Clone)]
pub struct ImageResult {
    /// Plan name.
    pub image: String,
    /// `REGISTRY/NAMESPACE/IMAGE:TAG`.
    pub list: String,
    /// How it ended.
    pub outcome: ImageOutcome,
}

/// The verdict of a run: `Fail` when any image failed to build or fails its policy, else
/// `Error` when any could not be completed, else `Pass`.
pub fn overall(results: &[ImageResult]) -> Verdict {
    // `Verdict` orders Pass < Error < Fail.
    results
        .iter()
        .map(|r| match &r.outcome {
            ImageOutcome::BuildFailed(_) => Verdict::Fail,
            ImageOutcome::Verified { report, .. } => report.verdict,
            ImageOutcome::Incomplete(_) => Verdict::Error,
        })
        .max()
        .unwrap_or(Verdict::Pass)
}
