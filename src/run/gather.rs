//! Gathering a run's images ([`RunPlan::gather`]): the release's components join the typed,
//! listed and templated images, one target per image; the run's one session reads the
//! release and is told of the targets as they are known;
//! then verifying them ([`Gathered::verify`]) or handing them to another judge (the mirror
//! gate) through the same session.

use std::collections::HashMap;

use super::drivers::{self, PlannedDriver};
use super::error::RunError;
use super::outcome::Outcome;
use super::progress::{Note, Progress};
use super::sink::{Delivery, ReportSink};
use super::targets::{Target, from_release, merge, name_runtimes};
use super::upgrade::{self, UpgradePlan, Watch};
use super::verify::{Settings, verify_all};
use crate::auth::AuthStore;
use crate::cluster::drivers::WorkloadPair;
use crate::cluster::nodes::NodeRuntime;
use crate::cluster::release::{Release, ReleaseError, read_release};
use crate::cluster::upgrade::UpgradeReport;
use crate::engine::{ImageReport, Verdict};
use crate::engine::{NodePlacement, RunExtras};
use crate::reference::ImageRef;
use crate::session::Session;
use crate::source::registry::{ClientOptions, Stats};

/// The inputs read, before anything is fetched (made by `Inputs::plan`).
#[derive(Debug)]
pub struct RunPlan {
    /// How the images are judged.
    pub settings: Settings,
    /// Notes about the inputs, in the order they arose.
    pub notes: Vec<Note>,
    pub(super) listed: Vec<Target>,
    pub(super) release: Option<ReleasePlan>,
    pub(super) from_manifests: Vec<Target>,
    /// The Windows nodes' sandbox image, when Windows nodes are in scope.
    pub(super) sandbox: Option<Target>,
    /// The runtimes the nodes of `--nodes` report, with their profile and why.
    pub(super) runtimes: Vec<NodeRuntime>,
    /// The upgrade gate, when asked for (`--upgrade`).
    pub(super) upgrade: Option<UpgradePlan>,
    /// The pairs of DaemonSets that are the Linux and Windows halves of one CSI driver.
    pub(super) pairs: Vec<WorkloadPair>,
}

/// The release to read and the components to take from it.
#[derive(Debug)]
pub(super) struct ReleasePlan {
    pub(super) reference: ImageRef,
    pub(super) components: Vec<String>,
}

impl RunPlan {
    /// The references typed, listed and found in pod templates, then the Windows nodes'
    /// sandbox image when they are in scope (the release's components are not known before it
    /// is fetched), in that order.
    pub fn local_references(&self) -> Vec<ImageRef> {
        self.local_targets().map(|t| t.reference.clone()).collect()
    }

    /// The images known before anything is fetched: typed, listed, templated, then the
    /// Windows nodes' sandbox image.
    pub(super) fn local_targets(&self) -> impl Iterator<Item = &Target> {
        (self.listed.iter())
            .chain(&self.from_manifests)
            .chain(&self.sandbox)
    }

    /// The images the ImageSetConfigurations name (`--from-imageset`), in order.
    pub(super) fn imageset_images(&self) -> Vec<ImageRef> {
        let from_imageset = |t: &&Target| {
            (t.origins.iter()).any(|o| matches!(o, crate::engine::Origin::Imageset { .. }))
        };
        (self.listed.iter().filter(from_imageset))
            .map(|t| t.reference.clone())
            .collect()
    }

    /// Gathers the images ([`RunPlan::gather`]) and verifies them ([`Gathered::verify`]).
    pub async fn verify(
        self,
        connection: Connection,
        progress: &dyn Progress,
    ) -> Result<Verified, RunError> {
        self.gather(connection).await?.verify(progress).await
    }

    /// Gathers the images ([`RunPlan::gather`]) and verifies them, each report handed to `sink`
    /// as soon as its turn comes ([`Gathered::verify_into`]).
    pub async fn verify_into(
        self,
        connection: Connection,
        progress: &dyn Progress,
        sink: &mut dyn ReportSink,
    ) -> Result<Finished, RunError> {
        let gathered = self.gather(connection).await?;
        gathered.verify_into(progress, sink).await
    }

    /// Every image the inputs name, one target each: typed and listed, the release's
    /// components (read through the run's session, made from `connection`), the pod
    /// templates', the Windows nodes' sandbox image. The merge stops with
    /// [`RunError::Timeout`] once the connection's deadline (`--timeout`) has passed.
    pub async fn gather(self, connection: Connection) -> Result<Gathered, RunError> {
        let mut link = Link::new(&connection);
        let (deadline, limit) = (connection.options.ends_at(), connection.options.deadline);
        let mut all: Vec<Target> = self.listed;
        let mut missing = Vec::new();
        let drivers_policy = &self.settings.policy.drivers;
        let (mut drivers, _) = drivers::plan(&self.pairs, None, &[], drivers_policy);
        let mut payload = None;
        if let Some(plan) = &self.release {
            let read = link.read_release(&plan.reference).await?;
            let (planned, extra) =
                drivers::plan(&self.pairs, Some(&read), &plan.components, drivers_policy);
            drivers = planned;
            let components: Vec<String> = plan.components.iter().cloned().chain(extra).collect();
            let (found, lacking) = from_release(&read, &components);
            all.extend(found);
            missing = lacking;
            payload = Some(read);
        }
        all.extend(self.from_manifests);
        all.extend(self.sandbox);
        let mut targets = merge(all, deadline).map_err(|overdue| RunError::Timeout {
            what: overdue.to_string(),
            limit: limit.unwrap_or_default(),
        })?;
        let mut settings = self.settings;
        let upgrade = match self.upgrade {
            Some(plan) => {
                let target = plan.target(payload.as_ref())?;
                Some(upgrade::apply(
                    target,
                    &mut settings,
                    &mut targets,
                    &self.runtimes,
                ))
            }
            None => None,
        };
        let watched = drivers::watched(&drivers, &targets);
        Ok(Gathered {
            targets,
            missing,
            drivers: (drivers, watched),
            upgrade,
            settings,
            notes: self.notes,
            runtimes: self.runtimes,
            link,
        })
    }
}

/// Every image of a run, ready to be checked (made by [`RunPlan::gather`]).
pub struct Gathered {
    /// The images to judge, one per image.
    pub targets: Vec<Target>,
    /// Failing reports of the release components the payload lacks.
    pub missing: Vec<ImageReport>,
    /// The CSI drivers whose halves the run holds, and the target index of each half's image.
    drivers: (Vec<PlannedDriver>, HashMap<String, usize>),
    /// How the images are judged.
    pub settings: Settings,
    /// Notes about the inputs.
    pub notes: Vec<Note>,
    /// The runtimes the nodes of `--nodes` report, with their profile and why.
    pub runtimes: Vec<NodeRuntime>,
    /// The upgrade gate (`--upgrade`): the runtime after the upgrade and the Windows rows
    /// before and after.
    pub upgrade: Option<UpgradeReport>,
    link: Link,
}

impl Gathered {
    /// The targets' references.
    pub fn references(&self) -> Vec<ImageRef> {
        self.targets.iter().map(|t| t.reference.clone()).collect()
    }

    /// The run's session (the one that read the release), told of `refs`: the targets'
    /// references and any others the checks will read (mirrors).
    pub fn session(&mut self, refs: &[ImageRef]) -> &Session {
        self.link.session(refs)
    }

    /// Fetches and judges every target, telling `progress` as each is done, and returns every
    /// report (in input order, then the release components the payload lacks); the first bad
    /// input ends the run. [`Gathered::verify_into`] without keeping the reports.
    pub async fn verify(self, progress: &dyn Progress) -> Result<Verified, RunError> {
        let mut reports = Vec::new();
        let finished = self.verify_into(progress, &mut reports).await?;
        Ok(Verified::of(finished, reports))
    }

    /// Fetches and judges every target, at most `images_in_flight` at once, telling
    /// `progress` as each is done, and hands each report to `sink` in input order as soon as
    /// it and every one before it are judged; then the release components the payload lacks.
    /// The run keeps no report ([`Delivery`]). The first bad input (in input order) ends the
    /// run: the reports before it have reached the sink, it and those after it do not.
    pub async fn verify_into(
        mut self,
        progress: &dyn Progress,
        sink: &mut dyn ReportSink,
    ) -> Result<Finished, RunError> {
        self.expect_targets();
        let (session, walk) = (&self.link.session, self.settings.walk);
        let policy = &mut self.settings.policy;
        if let Some(note) = super::csiproxy::learn(session, walk, policy, &mut self.targets).await {
            progress.note(&note);
            self.notes.push(note);
        }
        progress.start(self.targets.len());
        let done = |o: &Outcome| progress.done(o);
        let mut upgrade = self.upgrade.take();
        let nodes = upgrade.as_ref().map_or(&[][..], |u| &u.nodes[..]);
        let mut watch = Watch {
            sink,
            nodes,
            found: Vec::new(),
        };
        let mut delivery = Delivery::new(&self.targets, &mut watch);
        delivery.keep_sources(self.drivers.1.values().copied().collect());
        let (session, targets) = (&self.link.session, &self.targets);
        let mut each = |o| delivery.outcome(o);
        verify_all(session, targets, &self.settings, &done, &mut each).await?;
        let mut finished = self.finish(delivery)?;
        let found = watch.found;
        if let Some(u) = &mut upgrade {
            u.images = found;
        }
        finished.upgrade = upgrade;
        Ok(finished)
    }

    /// Tells the session of the targets' references, a slice at a time (a whole catalog's
    /// references are never copied at once).
    fn expect_targets(&mut self) {
        const AT_ONCE: usize = 1024;
        for slice in self.targets.chunks(AT_ONCE) {
            let refs: Vec<ImageRef> = slice.iter().map(|t| t.reference.clone()).collect();
            self.link.session(&refs);
        }
    }

    /// The reports of this run's targets on their way to `sink`, for a caller that checks
    /// the targets its own way (the mirror gate): each outcome, in target order, to
    /// [`Delivery::outcome`], then [`Gathered::finish`].
    pub fn delivery<'s>(&self, sink: &'s mut dyn ReportSink) -> Delivery<'s> {
        Delivery::new(&self.targets, sink)
    }

    /// The run's end once its targets' outcomes are delivered: the release components the
    /// payload lacks go to the sink last; then the counts, the per-node answer, the notes and
    /// the request counters.
    pub fn finish(self, mut delivery: Delivery<'_>) -> Result<Finished, RunError> {
        for r in self.missing {
            delivery.report(r)?;
        }
        let (planned, watched) = &self.drivers;
        if let Some(sources) = delivery.sources() {
            for r in drivers::reports(planned, watched, sources) {
                delivery.report(r)?;
            }
        }
        let (images, verdict, mut placements) = delivery.end();
        name_runtimes(&mut placements, &self.runtimes);
        Ok(Finished {
            images,
            verdict,
            placements,
            notes: self.notes,
            runtimes: self.runtimes,
            upgrade: self.upgrade,
            stats: self.link.stats(),
            release_stats: self.link.release_stats(),
        })
    }
}

/// The end of a run whose reports went to a [`ReportSink`]: how many, their overall verdict, and
/// what the report shows besides the images.
#[derive(Debug)]
pub struct Finished {
    /// The reports handed to the sink.
    pub images: usize,
    /// Their overall verdict (the worst: `Fail`, else `Error`, else `Pass`).
    pub verdict: Verdict,
    /// The per-node answer (`--nodes` with pod templates): each container on each node its
    /// pods land on, in target order.
    pub placements: Vec<NodePlacement>,
    /// Notes about the inputs (also told to the run's [`Progress`]).
    pub notes: Vec<Note>,
    /// The runtimes the nodes of `--nodes` report, with their profile and why.
    pub runtimes: Vec<NodeRuntime>,
    /// The upgrade gate (`--upgrade`): the runtime after, the Windows rows before and after,
    /// the rows whose verdict the upgrade changes.
    pub upgrade: Option<UpgradeReport>,
    /// Request counters of checking the images, the release's reading left out (`None`: no
    /// image is in a registry).
    pub stats: Option<String>,
    /// Request counters of reading the release (`--from-release`), when it was read from a
    /// registry.
    pub release_stats: Option<String>,
}

impl Finished {
    /// What the report shows besides the images: the notes, one line each, and the per-node
    /// answer.
    pub fn extras(&self) -> RunExtras {
        extras(
            &self.notes,
            &self.placements,
            &self.runtimes,
            self.upgrade.as_ref(),
        )
    }
}

/// The notes, one line each, the per-node answer and the nodes' runtimes.
fn extras(
    notes: &[Note],
    placements: &[NodePlacement],
    runtimes: &[NodeRuntime],
    upgrade: Option<&UpgradeReport>,
) -> RunExtras {
    RunExtras {
        notes: notes.iter().map(ToString::to_string).collect(),
        placements: placements.to_vec(),
        runtimes: runtimes.to_vec(),
        upgrade: upgrade.cloned(),
    }
}

/// The result of a run: one report per image, in input order (then the release components
/// the payload lacks), the notes about its inputs and its registry request counters.
#[derive(Debug)]
pub struct Verified {
    /// The reports.
    pub reports: Vec<ImageReport>,
    /// The per-node answer (`--nodes` with pod templates): each container on each node its
    /// pods land on, in target order.
    pub placements: Vec<NodePlacement>,
    /// Notes about the inputs (also told to the run's [`Progress`]).
    pub notes: Vec<Note>,
    /// The runtimes the nodes of `--nodes` report, with their profile and why.
    pub runtimes: Vec<NodeRuntime>,
    /// The upgrade gate (`--upgrade`): the runtime after, the Windows rows before and after,
    /// the rows whose verdict the upgrade changes.
    pub upgrade: Option<UpgradeReport>,
    /// Request counters of checking the images, the release's reading left out (`None`: no
    /// image is in a registry).
    pub stats: Option<String>,
    /// Request counters of reading the release (`--from-release`), when it was read from a
    /// registry.
    pub release_stats: Option<String>,
}

impl Verified {
    /// The run's end with the reports its sink kept.
    fn of(finished: Finished, reports: Vec<ImageReport>) -> Verified {
        Verified {
            reports,
            placements: finished.placements,
            notes: finished.notes,
            runtimes: finished.runtimes,
            upgrade: finished.upgrade,
            stats: finished.stats,
            release_stats: finished.release_stats,
        }
    }

    /// What the report shows besides the images: the notes, one line each, and the per-node
    /// answer.
    pub fn extras(&self) -> RunExtras {
        extras(
            &self.notes,
            &self.placements,
            &self.runtimes,
            self.upgrade.as_ref(),
        )
    }
}

/// How a run reaches registries: the client options (`max_requests`: the run's jobs) and the
/// credentials.
#[derive(Debug, Clone)]
pub struct Connection {
    /// Client options.
    pub options: ClientOptions,
    /// Credentials.
    pub auth: AuthStore,
}

/// A run's one session, told of the references as the run learns them, and the request
/// counters of reading the release, kept apart from the rest of the run's.
struct Link {
    session: Session,
    /// The counters right after the release was read.
    release: Option<Stats>,
    /// Was the session told of a registry reference past the release?
    registry_targets: bool,
}

impl Link {
    /// The run's session; no registry is contacted yet.
    fn new(connection: &Connection) -> Link {
        Link {
            session: Session::new(&connection.options, connection.auth.clone()),
            release: None,
            registry_targets: false,
        }
    }

    /// Reads the release through the session, and notes the counters so far.
    async fn read_release(&mut self, reference: &ImageRef) -> Result<Release, ReleaseError> {
        self.session.expect(std::slice::from_ref(reference));
        let release = read_release(&self.session, reference).await?;
        self.release = self.session.stats().map(Stats::snapshot);
        Ok(release)
    }

    /// The session, told of `refs` (the targets', and any others the checks read).
    fn session(&mut self, refs: &[ImageRef]) -> &Session {
        self.registry_targets |= refs.iter().any(|r| matches!(r, ImageRef::Registry(_)));
        self.session.expect(refs);
        &self.session
    }

    /// The counters of reading the release, when it was read from a registry.
    fn release_stats(&self) -> Option<String> {
        Some(self.release.as_ref()?.summary())
    }

    /// The counters of the run past the release; `None` when none of its references past the
    /// release is in a registry.
    fn stats(&self) -> Option<String> {
        let stats = self.session.stats().filter(|_| self.registry_targets)?;
        Some(match &self.release {
            Some(release) => stats.since(release).summary(),
            None => stats.summary(),
        })
    }
}
