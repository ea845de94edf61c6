//! A run's images gathered ([`Gathered`]): verified here, or checked by another judge (the
//! mirror gate) through the same session.

use super::connect::Link;
use super::error::RunError;
use super::outcome::Outcome;
use super::progress::{Note, Progress};
use super::settings::Settings;
use super::targets::Target;
use super::verified::Verified;
use super::verify::verify_all;
use crate::engine::ImageReport;
use crate::reference::ImageRef;
use crate::session::Session;

/// Every image of a run, ready to be checked (made by [`Plan::gather`](super::Plan::gather)).
pub struct Gathered {
    /// The images to judge, one per image.
    pub targets: Vec<Target>,
    /// Failing reports of the release components the payload lacks.
    pub missing: Vec<ImageReport>,
    /// How the images are judged.
    pub settings: Settings,
    /// Notes about the inputs.
    pub notes: Vec<Note>,
    /// Request counters of reading the release, when it was read from a registry.
    pub release_stats: Option<String>,
    pub(super) link: Link,
}

impl Gathered {
    /// The targets' references.
    pub fn references(&self) -> Vec<ImageRef> {
        self.targets.iter().map(|t| t.reference.clone()).collect()
    }

    /// The run's session, for `refs`: the targets' references and any others the checks
    /// will read (mirrors).
    pub async fn session(&mut self, refs: &[ImageRef]) -> &Session {
        self.link.session(refs).await
    }

    /// Fetches and judges every target, telling `progress` as each is done; the first bad
    /// input ends the run.
    pub async fn verify(mut self, progress: &dyn Progress) -> Result<Verified, RunError> {
        let refs = self.references();
        let session = self.link.session(&refs).await;
        progress.start(self.targets.len());
        let done = |o: &Outcome| progress.done(o);
        let outcomes = verify_all(session, &self.targets, &self.settings, &done).await;
        self.finish(outcomes)
    }

    /// The run's result from the outcomes of its targets (in their order): their reports,
    /// then the release components the payload lacks; the first bad input ends the run
    /// instead.
    pub fn finish(self, outcomes: Vec<Outcome>) -> Result<Verified, RunError> {
        let mut reports = outcomes
            .into_iter()
            .map(|o| match o {
                Outcome::Report(r) => Ok(r),
                Outcome::BadInput(e) => Err(RunError::Input(e)),
            })
            .collect::<Result<Vec<_>, _>>()?;
        reports.extend(self.missing);
        Ok(Verified {
            reports,
            notes: self.notes,
            stats: self.link.stats(),
            release_stats: self.release_stats,
        })
    }
}
