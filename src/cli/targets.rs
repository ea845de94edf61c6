//! The images of `verify` and `mirror-check`: typed and listed references, a release
//! payload's components (`--from-release`), the images of pod templates (`--from-manifests`).

use imgcheck::batch::Target;
use imgcheck::cluster::{manifests, release, targets};
use imgcheck::engine::ImageReport;
use imgcheck::policy::Policy;
use imgcheck::reference::ImageRef;
use imgcheck::session::Session;
use imgcheck::source::registry::Stats;

use super::{CliError, GlobalArgs, RefInput, output};

/// What a run verifies: targets to fetch and judge, and reports already made (release
/// components the payload lacks).
pub struct Gathered {
    /// The images to judge, one per reference.
    pub targets: Vec<Target>,
    /// Failing reports of components the release lacks.
    pub missing: Vec<ImageReport>,
    /// The session that read `--from-release`'s release image, until [`Gathered::session`]
    /// hands it on to the rest of the run.
    release_session: Option<Session>,
    /// The request counters right after the release was read from a registry.
    release_stats: Option<Stats>,
    /// Do the references the run's session was opened (or told) with include a registry one?
    registry_targets: bool,
}

impl RefInput {
    /// Every image the inputs name, at least one.
    pub async fn gather(
        &self,
        global: &GlobalArgs,
        policy: &Policy,
        jobs: usize,
    ) -> Result<Gathered, CliError> {
        let mut all: Vec<Target> = self.collect()?.into_iter().map(Target::plain).collect();
        // Local input first: a bad manifest is exit 2 even when the release cannot be read.
        let from_manifests = match &self.from_manifests {
            Some(path) => {
                let uses = manifests::read_manifests(path)?;
                note_undecided(&uses);
                targets::from_manifests(&uses, policy)
            }
            None => Vec::new(),
        };
        let mut missing = Vec::new();
        let mut release_session = None;
        let mut release_stats = None;
        if let Some(r) = &self.from_release {
            let (session, found, lacking) = self.release_targets(global, policy, r, jobs).await?;
            all.extend(found);
            missing = lacking;
            release_stats = session.stats().map(Stats::snapshot);
            release_session = Some(session);
        }
        all.extend(from_manifests);
        if all.is_empty() && missing.is_empty() {
            return Err(CliError::NoReferences);
        }
        Ok(Gathered {
            targets: targets::merge(all),
            missing,
            release_session,
            release_stats,
            registry_targets: false,
        })
    }

    /// The release's components: those `--release-image` names, else the policy's
    /// `release.components`; with the session that read the release.
    async fn release_targets(
        &self,
        global: &GlobalArgs,
        policy: &Policy,
        reference: &str,
        jobs: usize,
    ) -> Result<(Session, Vec<Target>, Vec<ImageReport>), CliError> {
        let names = match self.release_images.is_empty() {
            true => policy.release_components(),
            false => self.release_images.clone(),
        };
        if names.is_empty() {
            return Err(CliError::NoReleaseComponents(policy.name.clone()));
        }
        let reference: ImageRef = reference.parse()?;
        let session = global.session(std::slice::from_ref(&reference), jobs)?;
        let payload = release::read_release(&session, &reference).await?;
        let (found, lacking) = targets::from_release(&payload, &names);
        Ok((session, found, lacking))
    }
}

impl Gathered {
    /// Request counters of reading `--from-release`'s release image, when one was read from a
    /// registry.
    pub fn release_stats(&self) -> Option<String> {
        Some(self.release_stats.as_ref()?.summary())
    }

    /// Request counters of the rest of the run (the targets, and mirrors), the release's
    /// reading left out; `None` when none of `session`'s references past the release is in
    /// a registry.
    pub fn run_stats(&self, session: &Session) -> Option<Stats> {
        let stats = session.stats().filter(|_| self.registry_targets)?;
        Some(match &self.release_stats {
            Some(release) => stats.since(release),
            None => stats.snapshot(),
        })
    }

    /// The targets' references.
    pub fn references(&self) -> Vec<ImageRef> {
        self.targets.iter().map(|t| t.reference.clone()).collect()
    }

    /// The run's session, told of `refs` (the targets', and mirrors): the one that read the
    /// release (same credentials, connections and `--timeout` deadline), else a new one.
    pub fn session(
        &mut self,
        global: &GlobalArgs,
        refs: &[ImageRef],
        jobs: usize,
    ) -> Result<Session, CliError> {
        self.registry_targets = refs.iter().any(|r| matches!(r, ImageRef::Registry(_)));
        match self.release_session.take() {
            Some(session) => {
                session.expect(refs);
                Ok(session)
            }
            None => global.session(refs, jobs),
        }
    }
}

/// Says once per label key that placement on it could not be decided from host rows.
fn note_undecided(uses: &[manifests::ImageUse]) {
    let keys: std::collections::BTreeSet<String> = uses
        .iter()
        .flat_map(|u| u.placement.undecided_keys())
        .collect();
    for key in keys {
        output::eprintln(format_args!(
            "imgcheck: note: pod placement on the node label '{key}' cannot be decided from \
             host rows: it does not narrow the hosts judged"
        ));
    }
}
