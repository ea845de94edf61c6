//! The upgrade gate in a run (`verify --upgrade`): the hosts of `--nodes` as they are and as
//! WMCO's upgrade leaves them ([`crate::cluster::upgrade`]), put in the run's policy and its
//! targets' scopes once the version upgraded to is known (typed, or the release payload's),
//! and each report watched on its way to the sink for a row whose verdict the upgrade changes.

use std::collections::BTreeMap;

use super::error::RunError;
use super::sink::ReportSink;
use super::targets::Target;
use super::verify::Settings;
use crate::cluster::nodes::NodeRuntime;
use crate::cluster::release::Release;
use crate::cluster::upgrade::{
    ProfileChange, UpgradeReport, UpgradeTarget, UpgradeTo, VerdictChange, profile_changes,
    resolve_target, upgraded_hosts,
};
use crate::engine::{HostStatus, ImageReport};
use crate::policy::Policy;

/// An upgrade gate asked for, before the release is read.
#[derive(Debug)]
pub(super) struct UpgradePlan {
    /// The target, when typed (`--upgrade-to`); `None`: the release payload's version.
    target: Option<UpgradeTarget>,
}

impl UpgradePlan {
    /// The plan of `to`: a typed version is resolved now (bad input before any request); a
    /// node list is required, and for [`UpgradeTo::Release`] a release.
    pub(super) fn new(to: &UpgradeTo, nodes: bool, release: bool) -> Result<Self, RunError> {
        let bad = |why: String| RunError::Upgrade(why);
        if !nodes {
            return Err(bad(
                "--upgrade judges the nodes of a cluster: give them with --nodes".into(),
            ));
        }
        let target = match to {
            UpgradeTo::Version(v) => Some(
                resolve_target(v, "--upgrade-to").map_err(|e| bad(format!("--upgrade-to {e}")))?,
            ),
            UpgradeTo::Release if release => None,
            UpgradeTo::Release => {
                return Err(bad(
                    "--upgrade needs the version upgraded to: --from-release TARGET, or \
                     --upgrade-to VERSION"
                        .into(),
                ));
            }
        };
        Ok(UpgradePlan { target })
    }

    /// The target: typed, else the version `release` carries (`image-references`'
    /// `metadata.name`).
    pub(super) fn target(self, release: Option<&Release>) -> Result<UpgradeTarget, RunError> {
        if let Some(t) = self.target {
            return Ok(t);
        }
        let release = release.ok_or_else(|| RunError::Upgrade("no release was read".into()))?;
        let from = format!("the version of release {}", release.reference);
        let version = release.version.as_deref().ok_or_else(|| {
            RunError::Upgrade(format!(
                "--upgrade: release {} carries no version (its image-references has no \
                 metadata.name): give it with --upgrade-to VERSION",
                release.reference
            ))
        })?;
        resolve_target(version, &from).map_err(|e| RunError::Upgrade(format!("--upgrade: {e}")))
    }
}

/// Puts the rows after the upgrade to `target` into `policy` and into every target's scope
/// (policies whose hosts are the nodes'), and returns what the report says of the nodes.
pub(super) fn apply(
    target: UpgradeTarget,
    settings: &mut Settings,
    targets: &mut [Target],
    runtimes: &[NodeRuntime],
) -> UpgradeReport {
    let policy = &mut settings.policy;
    let to = target.profile;
    let reported: BTreeMap<&str, &str> = (runtimes.iter())
        .flat_map(|r| r.nodes.iter().map(|n| (n.as_str(), r.version.as_str())))
        .collect();
    let nodes = profile_changes(&policy.hosts(), to, &reported);
    let upgrade = |p: &mut Policy| {
        if p.node_hosts.is_some() {
            let hosts = upgraded_hosts(&p.hosts(), to);
            *p = p.clone().with_hosts(hosts);
        }
    };
    upgrade(policy);
    settings.runtimes = policy.runtimes.clone();
    targets
        .iter_mut()
        .filter_map(|t| t.scope.as_mut())
        .for_each(|s| upgrade(&mut s.policy));
    UpgradeReport {
        target,
        nodes,
        images: Vec::new(),
    }
}

/// A sink that notes, of each report on its way, the rows whose verdict the upgrade changes.
pub(super) struct Watch<'s> {
    /// Where the reports go.
    pub(super) sink: &'s mut dyn ReportSink,
    /// The Windows rows before and after.
    pub(super) nodes: &'s [ProfileChange],
    /// What was found so far.
    pub(super) found: Vec<VerdictChange>,
}

impl ReportSink for Watch<'_> {
    fn report(&mut self, report: ImageReport) -> std::io::Result<()> {
        self.found.extend(verdict_changes(self.nodes, &report));
        self.sink.report(report)
    }
}

/// The rows of `report` whose status differs under the profile of today and after the upgrade,
/// for each Windows row that changes profile.
fn verdict_changes(nodes: &[ProfileChange], report: &ImageReport) -> Vec<VerdictChange> {
    let status = |platform: &str, profile| {
        let rows = report.hosts.iter();
        let mut rows = rows.filter(|h| h.platform == platform && h.runtime == Some(profile));
        let first = rows.next()?.status;
        Some(
            match rows.map(|h| h.status).find(|s| *s != HostStatus::Ok) {
                Some(failing) => failing,
                None => first,
            },
        )
    };
    (nodes.iter())
        .filter(|c| c.before != c.after)
        .filter_map(|c| {
            let (before, after) = (
                status(&c.platform, c.before)?,
                status(&c.platform, c.after)?,
            );
            (before != after).then(|| VerdictChange {
                image: report.reference.clone(),
                platform: c.platform.clone(),
                nodes: c.nodes.clone(),
                before: c.before,
                before_status: before.id().to_string(),
                after: c.after,
                after_status: after.id().to_string(),
            })
        })
        .collect()
}
