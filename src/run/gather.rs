//! Gathering a run's images ([`Plan::gather`]): the release's components join the typed,
//! listed and templated images, one target per image, read through the run's one session;
//! then verifying them ([`Gathered::verify`]) or handing them to another judge (the mirror
//! gate) through the same session.

use super::error::RunError;
use super::outcome::Outcome;
use super::progress::{Note, Progress};
use super::targets::{Target, from_release, merge};
use super::verify::{Settings, verify_all};
use crate::auth::AuthStore;
use crate::cluster::release::read_release;
use crate::engine::ImageReport;
use crate::reference::ImageRef;
use crate::session::Session;
use crate::source::registry::ClientOptions;

/// The inputs read, before anything is fetched (made by [`Inputs::plan`](super::Inputs::plan)).
#[derive(Debug)]
pub struct Plan {
    /// How the images are judged.
    pub settings: Settings,
    /// Notes about the inputs, in the order they arose.
    pub notes: Vec<Note>,
    pub(super) listed: Vec<ImageRef>,
    pub(super) release: Option<ReleasePlan>,
    pub(super) from_manifests: Vec<Target>,
}

/// The release to read and the components to take from it.
#[derive(Debug)]
pub(super) struct ReleasePlan {
    pub(super) reference: ImageRef,
    pub(super) components: Vec<String>,
}

impl Plan {
    /// Gathers the images ([`Plan::gather`]) and verifies them ([`Gathered::verify`]).
    pub async fn verify(
        self,
        connection: Connection,
        progress: &dyn Progress,
    ) -> Result<Verified, RunError> {
        self.gather(connection).await?.verify(progress).await
    }

    /// Every image the inputs name, one target each: typed and listed, the release's
    /// components (read through the run's session, made from `connection`), the pod
    /// templates'.
    pub async fn gather(self, connection: Connection) -> Result<Gathered, RunError> {
        let mut link = Link::new(connection);
        let mut all: Vec<Target> = self.listed.into_iter().map(Target::plain).collect();
        let mut missing = Vec::new();
        let mut release_stats = None;
        if let Some(plan) = &self.release {
            let session = link.session(std::slice::from_ref(&plan.reference)).await;
            let payload = read_release(session, &plan.reference).await?;
            let (found, lacking) = from_release(&payload, &plan.components);
            all.extend(found);
            missing = lacking;
            release_stats = link.stats();
        }
        all.extend(self.from_manifests);
        Ok(Gathered {
            targets: merge(all),
            missing,
            settings: self.settings,
            notes: self.notes,
            release_stats,
            link,
        })
    }
}

/// Every image of a run, ready to be checked (made by [`Plan::gather`]).
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
    link: Link,
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

/// The result of a run: one report per image, in input order (then the release components
/// the payload lacks), the notes about its inputs and its registry request counters.
#[derive(Debug)]
pub struct Verified {
    /// The reports.
    pub reports: Vec<ImageReport>,
    /// Notes about the inputs (also told to the run's [`Progress`]).
    pub notes: Vec<Note>,
    /// Request counters of checking the images (`None`: no registry was contacted).
    pub stats: Option<String>,
    /// Request counters of reading the release (`--from-release`), when it was read from a
    /// registry.
    pub release_stats: Option<String>,
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

/// A run's way to the world: the connection, and the session once one is made.
struct Link {
    connection: Connection,
    session: Option<Session>,
}

impl Link {
    /// No session yet.
    fn new(connection: Connection) -> Link {
        Link {
            connection,
            session: None,
        }
    }

    /// The run's session for `refs`. A session is still made for the references it will
    /// read (plain-HTTP probes, token scopes): after the release was read, the targets get
    /// its successor (same credentials, same `--timeout` deadline, request counters of
    /// their own).
    async fn session(&mut self, refs: &[ImageRef]) -> &Session {
        let next = match &self.session {
            Some(s) => s.successor(refs).await,
            None => {
                let Connection { options, auth } = &self.connection;
                Session::new(options, auth.clone(), refs).await
            }
        };
        self.session.insert(next)
    }

    /// The request counters of the session, when a registry was contacted.
    fn stats(&self) -> Option<String> {
        Some(self.session.as_ref()?.stats()?.summary())
    }
}
