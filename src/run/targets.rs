//! The images a run verifies ([`Target`]): typed and listed references, the components of a
//! release payload (`--from-release`) and the containers of pod templates
//! (`--from-manifests`), each with where it was found and, for pod templates, the hosts its
//! pods can land on ([`Scope`]); one target per image ([`merge`]).

use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::hash::Hash;

use crate::cluster::manifests::ImageUse;
use crate::cluster::release::Release;
use crate::engine::{Finding, ImageReport, Origin, Rule, judge};
use crate::graph::Graph;
use crate::platform::RuntimeProfile;
use crate::policy::{Host, Isolation, Policy};
use crate::reference::ImageRef;

/// An image a run verifies: its reference, where it was found, and — for an image whose pods
/// land on fewer hosts than the run judges — its own scope.
#[derive(Debug, Clone)]
pub struct Target {
    /// The reference.
    pub reference: ImageRef,
    /// Where it was found (empty: typed or listed).
    pub origins: Vec<Origin>,
    /// The narrower policy it is judged against, if any.
    pub scope: Option<Scope>,
}

/// The hosts an image's pods can land on, as a policy, and why.
#[derive(Debug, Clone)]
pub struct Scope {
    /// The run's policy narrowed to those hosts (and the pods' isolation).
    pub policy: Policy,
    /// Where the pods can land, for messages (e.g. `kubernetes.io/os In [windows]`).
    pub placement: String,
}

impl Scope {
    /// The warning a report of an image in this scope carries when its pods land on no host
    /// judged (`no-host-in-scope`): only its content was checked. `None` when some host is in
    /// scope.
    pub fn no_host(&self) -> Option<Finding> {
        self.policy.hosts().is_empty().then(|| {
            Finding::new(
                Rule::NoHostInScope,
                format!(
                    "its pods can land on no host judged ({}): only its content was checked",
                    self.placement
                ),
                None,
            )
        })
    }

    /// Adds the [`Scope::no_host`] warning, if any, to `report` (findings kept in severity
    /// order) when its image was read (a report without a digest checked nothing). The
    /// verdict stays: a warning does not change it.
    pub fn note_on(&self, report: &mut ImageReport) {
        if report.digest.is_none() {
            return;
        }
        if let Some(f) = self.no_host() {
            report.findings.push(f);
            report.findings.sort_by_key(|f| f.severity);
        }
    }
}

impl Target {
    /// A reference typed or listed: judged against the run's policy.
    pub fn plain(reference: ImageRef) -> Target {
        Target {
            reference,
            origins: vec![],
            scope: None,
        }
    }

    /// Judges the graph of this target under `runtimes`: against its scope, else `policy`
    /// (the run's); an empty scope judges the content only and says so (`no-host-in-scope`).
    pub fn judge(
        &self,
        graph: &Graph,
        policy: &Policy,
        runtimes: &[RuntimeProfile],
    ) -> ImageReport {
        let policy = self.scope.as_ref().map_or(policy, |s| &s.policy);
        let mut report = judge(graph, policy, runtimes);
        report.origins = self.origins.clone();
        if let Some(scope) = &self.scope {
            scope.note_on(&mut report);
        }
        report
    }
}

/// The components `names` of `release`: a target for each one the payload has (in the order
/// of `names`, once each), and a failing `release-image-missing` report for each it lacks.
pub fn from_release(release: &Release, names: &[String]) -> (Vec<Target>, Vec<ImageReport>) {
    let mut targets = Vec::new();
    let mut missing = Vec::new();
    let mut seen = BTreeSet::new();
    for name in names.iter().filter(|n| seen.insert(n.as_str())) {
        let origin = Origin::Release {
            release: release.reference.clone(),
            release_digest: release.digest.clone(),
            version: release.version.clone(),
            tag: name.clone(),
        };
        match release.tags.iter().find(|t| &t.name == name) {
            Some(tag) => targets.push(Target {
                reference: tag.image.clone(),
                origins: vec![origin],
                scope: None,
            }),
            None => missing.push(ImageReport::release_image_missing(
                &format!("{}#{name}", release.reference),
                format!(
                    "release {} has no component '{name}' (its release-manifests/image-references \
                     names {} components)",
                    release.version.as_deref().unwrap_or(&release.reference),
                    release.tags.len()
                ),
                origin,
            )),
        }
    }
    (targets, missing)
}

/// The sandbox (pause) image the policy's Windows nodes pull for every pod
/// (`windows.sandbox_image`), judged for the Windows hosts only; `None` when the policy judges
/// no Windows host or names no sandbox image.
pub fn sandbox(policy: &Policy) -> Option<Target> {
    let reference = policy.sandbox_image()?;
    Some(Target {
        reference,
        origins: vec![Origin::Sandbox {
            key: "windows.sandbox_image".to_string(),
        }],
        scope: Some(Scope {
            policy: policy.scoped(|h| h.platform.is_windows(), policy.isolation()),
            placement: "every pod on a Windows node".to_string(),
        }),
    })
}

/// The labels a node of `host` carries that pod placement can test: `kubernetes.io/os`,
/// `kubernetes.io/arch` and, on Windows, `node.kubernetes.io/windows-build` (`10.0.17763`).
pub fn host_labels(host: &Host) -> BTreeMap<&'static str, String> {
    let p = &host.platform;
    let mut labels = BTreeMap::from([
        ("kubernetes.io/os", p.os.clone()),
        ("kubernetes.io/arch", p.architecture.clone()),
    ]);
    if let Some(v) = p.windows_version() {
        labels.insert(
            "node.kubernetes.io/windows-build",
            format!("{}.{}.{}", v.major, v.minor, v.build),
        );
    }
    labels
}

/// The images of pod templates, one target per image (in order of first use): judged for the
/// hosts of `policy` any of its pods can land on, with `hostprocess` isolation when every pod
/// of it that can land on a Windows host is a HostProcess pod.
pub fn from_manifests(uses: &[ImageUse], policy: &Policy) -> Vec<Target> {
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut groups: Vec<(&ImageRef, Vec<&ImageUse>)> = Vec::new();
    for u in uses {
        match index.entry(identity(&u.image)) {
            Entry::Occupied(e) => groups[*e.get()].1.push(u),
            Entry::Vacant(e) => {
                e.insert(groups.len());
                groups.push((&u.image, vec![u]));
            }
        }
    }
    groups
        .into_iter()
        .map(|(reference, uses)| target_of(reference, &uses, policy))
        .collect()
}

/// The target of `reference`, used by `uses`.
fn target_of(reference: &ImageRef, uses: &[&ImageUse], policy: &Policy) -> Target {
    let admits = |h: &Host| {
        let labels = host_labels(h);
        uses.iter().any(|u| u.placement.admits(&labels))
    };
    let on_windows: Vec<&&ImageUse> = uses
        .iter()
        .filter(|u| {
            policy
                .hosts()
                .iter()
                .any(|h| h.platform.is_windows() && u.placement.admits(&host_labels(h)))
        })
        .collect();
    let isolation = match !on_windows.is_empty() && on_windows.iter().all(|u| u.hostprocess) {
        true => Isolation::Hostprocess,
        false => Isolation::Process,
    };
    let placements: BTreeSet<String> = uses.iter().map(|u| u.placement.to_string()).collect();
    Target {
        reference: reference.clone(),
        origins: uses.iter().map(|u| manifest_origin(u)).collect(),
        scope: Some(Scope {
            policy: policy.scoped(admits, isolation),
            placement: placements.into_iter().collect::<Vec<_>>().join(" or "),
        }),
    }
}

fn manifest_origin(u: &ImageUse) -> Origin {
    let o = &u.origin;
    let object = match &o.namespace {
        Some(ns) => format!("{} {ns}/{}", o.kind, o.name),
        None => format!("{} {}", o.kind, o.name),
    };
    Origin::Manifest {
        path: o.path.clone(),
        object,
        container: o.container.clone(),
        init: o.init,
    }
}

/// What makes two references the same image: the repository and digest when pinned (a
/// runtime pulls `name:tag@digest` by its digest and never reads the tag), else the whole
/// normalised reference.
fn identity(reference: &ImageRef) -> String {
    match reference {
        ImageRef::Registry(r) => match &r.digest {
            Some(d) => format!("{}/{}@{d}", r.registry, r.repository),
            None => r.to_string(),
        },
        ImageRef::Layout(_) => reference.to_string(),
    }
}

/// One target per image (the same repository and digest when pinned, else the same
/// reference), in order of first appearance: origins joined; an image also named without a
/// scope (typed, listed, a release component) is judged for every host.
pub fn merge(targets: Vec<Target>) -> Vec<Target> {
    merge_by(targets, identity)
}

/// [`merge`] with `key` telling which references are the same image: `key` is read once per
/// target and looked up in a hash map, and the origins a target already has are kept in a
/// set once another target joins it, so `n` targets merge in O(n log n).
fn merge_by<K: Eq + Hash>(
    targets: Vec<Target>,
    mut key: impl FnMut(&ImageRef) -> K,
) -> Vec<Target> {
    let mut merged: Vec<Target> = Vec::with_capacity(targets.len());
    // The origins of `merged[i]`, made when a second target joins it.
    let mut joined: HashMap<usize, BTreeSet<Origin>> = HashMap::new();
    let mut index: HashMap<K, usize> = HashMap::with_capacity(targets.len());
    for t in targets {
        match index.entry(key(&t.reference)) {
            Entry::Occupied(e) => {
                let m = &mut merged[*e.get()];
                let seen = joined
                    .entry(*e.get())
                    .or_insert_with(|| m.origins.iter().cloned().collect());
                for o in t.origins {
                    if seen.insert(o.clone()) {
                        m.origins.push(o);
                    }
                }
                if t.scope.is_none() {
                    m.scope = None;
                }
            }
            Entry::Vacant(e) => {
                e.insert(merged.len());
                merged.push(t);
            }
        }
    }
    merged
}

#[cfg(test)]
mod tests;
