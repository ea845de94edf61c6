//! A run's local inputs read ([`Plan`]), and gathering its images through its session
//! ([`Plan::gather`]): the release's components join the typed, listed and templated ones.

use super::connect::{Connection, Link};
use super::error::RunError;
use super::gathered::Gathered;
use super::progress::Note;
use super::settings::Settings;
use super::targets::{Target, from_release, merge};
use crate::cluster::release::read_release;
use crate::reference::ImageRef;

/// The inputs read, before anything is fetched (made by [`Inputs::plan`](super::Inputs::plan)).
#[derive(Debug)]
pub struct Plan {
    /// How the images are judged.
    pub settings: Settings,
    /// Notes about the inputs, in the order they arose.
    pub notes: Vec<Note>,
    pub(super) listed: Vec<Target>,
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
    /// Every image the inputs name, one target each: typed and listed, the release's
    /// components (read through the run's session, made from `connection`), the pod
    /// templates'.
    pub async fn gather(self, connection: Connection) -> Result<Gathered, RunError> {
        let mut link = Link::new(connection);
        let mut all = self.listed;
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
