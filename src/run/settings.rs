//! How a run judges its images.

use crate::graph::WalkOptions;
use crate::platform::RuntimeProfile;
use crate::policy::Policy;

/// Settings of a verify run.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The policy (with `--nodes`, the cluster's hosts).
    pub policy: Policy,
    /// Runtime profiles to judge with.
    pub runtimes: Vec<RuntimeProfile>,
    /// Walk options (per image).
    pub walk: WalkOptions,
    /// Images in flight at once.
    pub images_in_flight: usize,
}
