//! The images a run verifies ([`Target`]): typed and listed references, the components of a
//! release payload (`--from-release`) and the containers of pod templates
//! (`--from-manifests`), each with where it was found and, for pod templates, the hosts its
//! pods can land on ([`Scope`]); one target per image ([`merge`]).

use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::hash::Hash;
use std::time::Instant;

use super::progress::Note;
use crate::cluster::manifests::{ImageUse, ManifestOrigin, PlacementRefusal};
use crate::cluster::nodes::NodeRuntime;
use crate::cluster::release::Release;
use crate::engine::NodePlacement;
use crate::engine::{Finding, HostStatus, ImageReport, Origin, Rule, judge, judge_csi_proxy};
use crate::graph::Graph;
use crate::platform::RuntimeProfile;
use crate::policy::{Host, Isolation, Policy};
use crate::reference::ImageRef;
use crate::scheduling::NodeFacts;

/// An image a run verifies: its reference, where it was found, and — for an image whose pods
/// land on fewer hosts than the run judges — its own scope.
#[derive(Debug, Clone)]
pub struct Target {
    /// The reference.
    pub reference: ImageRef,
    /// Where it was found (empty: typed or listed).
    pub origins: Vec<Origin>,
    /// The narrower policy it is judged against, if any (boxed: most targets have none, and
    /// a catalog holds hundreds of thousands of targets).
    pub scope: Option<Box<Scope>>,
    /// The nodes of `--nodes` its pods land on, one entry per node and container.
    pub landings: Vec<Landing>,
}

/// One container of a pod template that lands on one node of `--nodes`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Landing {
    /// The node's name.
    pub node: String,
    /// The container and its workload.
    pub origin: ManifestOrigin,
}

/// The hosts an image's pods can land on, as a policy, and why.
#[derive(Debug, Clone)]
pub struct Scope {
    /// The run's policy narrowed to those hosts (and the pods' isolation).
    pub policy: Policy,
    /// Where the pods can land, for messages (e.g. `kubernetes.io/os In [windows]`).
    pub placement: String,
    /// A Windows workload (its pods select Windows nodes, or tolerate only their taints) that
    /// lands on no host: what keeps it off the Windows hosts (a taint, its labels). Its
    /// `no-host-in-scope` is then an error: no pod of it runs.
    pub runs_nowhere: Option<String>,
}

impl Scope {
    /// The finding a report of an image in this scope carries when its pods land on no host
    /// judged (`no-host-in-scope`): a warning (only its content was checked), or an error for
    /// a Windows workload that runs nowhere. `None` when some host is in scope.
    pub fn no_host(&self) -> Option<Finding> {
        if !self.policy.hosts().is_empty() {
            return None;
        }
        let Some(why) = &self.runs_nowhere else {
            let message = format!(
                "its pods can land on no host judged ({}): only its content was checked",
                self.placement
            );
            return Some(Finding::new(Rule::NoHostInScope, message, None));
        };
        let mut f = Finding::new(
            Rule::NoHostInScope,
            format!(
                "its pods are meant for Windows nodes but can land on none ({}): {why}; no pod of \
                 it runs",
                self.placement
            ),
            None,
        );
        f.severity = crate::engine::Severity::Error;
        Some(f.with_hint(RUNS_NOWHERE_HINT))
    }

    /// Adds the [`Scope::no_host`] finding, if any, to `report` (findings kept in severity
    /// order, the verdict following them) when its image was read (a report without a digest
    /// checked nothing).
    pub fn note_on(&self, report: &mut ImageReport) {
        if report.digest.is_none() {
            return;
        }
        if let Some(f) = self.no_host() {
            report.findings.push(f);
            report.findings.sort_by_key(|f| f.severity);
            report.verdict = report
                .verdict
                .max(crate::engine::verdict_of(&report.findings));
        }
    }
}

/// The hint of a Windows workload that lands on no node.
const RUNS_NOWHERE_HINT: &str = "give the pods the toleration of the Windows nodes' taint \
    (WMCO: os=Windows:NoSchedule) and a node selector their labels match \
    (kubernetes.io/os: windows, node.kubernetes.io/windows-build)";

impl Target {
    /// A reference typed or listed: judged against the run's policy.
    pub fn plain(reference: ImageRef) -> Target {
        Target {
            reference,
            origins: vec![],
            scope: None,
            landings: vec![],
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
        let proxy = judge_csi_proxy(graph, policy, &self.names());
        if !proxy.is_empty() {
            report.findings.extend(proxy);
            report.findings.sort_by_key(|f| f.severity);
            report.verdict = report
                .verdict
                .max(crate::engine::verdict_of(&report.findings));
        }
        if let Some(scope) = &self.scope {
            scope.note_on(&mut report);
        }
        report
    }
}

impl Target {
    /// The names the image is known by, for the policy's per-driver keys: its repository's
    /// last path component (`azure-file-csi-driver` of `quay.io/org/azure-file-csi-driver:v1`),
    /// the release components and the containers and workloads it was found as.
    pub fn names(&self) -> Vec<String> {
        let mut names = Vec::new();
        if let ImageRef::Registry(r) = &self.reference
            && let Some(last) = r.repository.rsplit('/').next()
        {
            names.push(last.to_string());
        }
        for origin in &self.origins {
            match origin {
                Origin::Release { tag, .. } => names.push(tag.clone()),
                Origin::Manifest {
                    object, container, ..
                } => {
                    names.push(container.clone());
                    if let Some(workload) = object.rsplit(['/', ' ']).next() {
                        names.push(workload.to_string());
                    }
                }
                _ => {}
            }
        }
        names.sort();
        names.dedup();
        names
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
                landings: vec![],
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
/// (`windows.sandbox_image`, or `key` when it was given in its place: `--sandbox-image`),
/// judged for the Windows hosts only; `None` when the policy judges no Windows host or names
/// no sandbox image.
pub fn sandbox(policy: &Policy, key: &str) -> Option<Target> {
    let reference = policy.sandbox_image()?;
    Some(Target {
        reference,
        origins: vec![Origin::Sandbox {
            key: key.to_string(),
        }],
        scope: Some(Box::new(Scope {
            policy: policy.scoped(|h| h.platform.is_windows(), policy.isolation()),
            placement: "every pod on a Windows node".to_string(),
            runs_nowhere: None,
        })),
        landings: vec![],
    })
}

/// Says, on the report of the sandbox image (`origins` hold [`Origin::Sandbox`]) that could
/// not be fetched, where its reference came from and how to name another or skip it: a
/// disconnected run often cannot reach the default one (mcr.microsoft.com).
pub fn sandbox_fetch_hint(report: &mut ImageReport, origins: &[Origin]) {
    let Some(key) = origins.iter().find_map(|o| match o {
        Origin::Sandbox { key } => Some(key),
        _ => None,
    }) else {
        return;
    };
    for f in (report.findings.iter_mut()).filter(|f| f.rule == Rule::FetchError) {
        f.message.push_str(&format!(
            "; this is the pause image every Windows pod pulls first, named by {key}: give the \
             one your Windows nodes use with --sandbox-image REF (or --sandbox-image none to \
             skip it), or set windows.sandbox_image in the policy"
        ));
    }
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
/// of it that can land on a Windows host is a HostProcess pod. With `cluster` (the nodes of
/// `--nodes`), each pod is placed on each node as Kubernetes places it and a host row keeps
/// the nodes some pod lands on; without it, a policy host is judged by the labels imgcheck
/// knows and the policy's taints. The notes say which workloads a taint (or a cordon) keeps
/// off which hosts.
pub fn from_manifests(
    uses: &[ImageUse],
    policy: &Policy,
    cluster: Option<&[NodeFacts]>,
) -> (Vec<Target>, Vec<Note>) {
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
    let placer = Placer::new(policy, cluster);
    let targets = groups
        .into_iter()
        .map(|(reference, uses)| placer.target_of(reference, &uses))
        .collect();
    (targets, placer.notes(uses))
}

/// Where each pod of a run lands: on the nodes of `--nodes`, else on the policy's hosts.
struct Placer<'a> {
    policy: &'a Policy,
    hosts: Vec<Host>,
    cluster: Option<BTreeMap<&'a str, &'a NodeFacts>>,
    /// The nodes of `--nodes` skipped (no host row holds them), in the list's order.
    skipped: Vec<&'a NodeFacts>,
}

impl<'a> Placer<'a> {
    fn new(policy: &'a Policy, cluster: Option<&'a [NodeFacts]>) -> Placer<'a> {
        Placer {
            policy,
            hosts: policy.hosts(),
            cluster: cluster.map(|c| {
                c.iter()
                    .filter(|n| n.skipped.is_none())
                    .map(|n| (n.name.as_str(), n))
                    .collect()
            }),
            skipped: cluster
                .into_iter()
                .flatten()
                .filter(|n| n.skipped.is_some())
                .collect(),
        }
    }

    /// For `use_` on `host`: the nodes it lands on (a policy host has none: `[""]` when the
    /// pod can land there), and why it does not land on the others.
    fn place(&self, u: &ImageUse, host: &Host) -> (Vec<String>, Vec<(String, PlacementRefusal)>) {
        let Some(cluster) = &self.cluster else {
            let taints = self.policy.taints(host.platform.is_windows());
            return match u.placement.admits_host(&host_labels(host), &taints) {
                Ok(()) => (vec![String::new()], vec![]),
                Err(r) => (vec![], vec![(host.label(), r)]),
            };
        };
        let mut on = Vec::new();
        let mut off = Vec::new();
        for name in &host.nodes {
            let Some(node) = cluster.get(name.as_str()) else {
                continue;
            };
            match u.placement.lands_on(node) {
                Ok(()) => on.push(name.clone()),
                Err(r) => off.push((name.clone(), r)),
            }
        }
        (on, off)
    }

    /// The target of `reference`, used by `uses`.
    fn target_of(&self, reference: &ImageRef, uses: &[&ImageUse]) -> Target {
        let mut landings = Vec::new();
        let mut kept: Vec<Host> = Vec::new();
        let mut on_windows: Vec<&ImageUse> = Vec::new();
        for h in &self.hosts {
            let mut nodes = BTreeSet::new();
            let mut lands = false;
            for u in uses {
                let (on, _) = self.place(u, h);
                if on.is_empty() {
                    continue;
                }
                lands = true;
                if h.platform.is_windows() {
                    on_windows.push(u);
                }
                for node in on.into_iter().filter(|n| !n.is_empty()) {
                    landings.push(Landing {
                        node: node.clone(),
                        origin: u.origin.clone(),
                    });
                    nodes.insert(node);
                }
            }
            if lands {
                let mut host = h.clone();
                if self.cluster.is_some() {
                    host.nodes = nodes.into_iter().collect();
                }
                kept.push(host);
            }
        }
        let isolation = match !on_windows.is_empty() && on_windows.iter().all(|u| u.hostprocess) {
            true => Isolation::Hostprocess,
            false => Isolation::Process,
        };
        let placements: BTreeSet<String> = uses.iter().map(|u| u.placement.to_string()).collect();
        let mut placement = placements.into_iter().collect::<Vec<_>>().join(" or ");
        let mut runs_nowhere = None;
        if kept.is_empty() {
            let skipped = self.skipped_landings(uses);
            if !skipped.is_empty() {
                placement = format!(
                    "{placement}; it lands only on nodes skipped: {}",
                    skipped.join("; ")
                );
            } else {
                runs_nowhere = self.kept_off_windows(uses);
            }
        }
        let policy = self.policy.scoped_to(
            |h| {
                kept.iter()
                    .find(|k| k.platform == h.platform && k.runtime == h.runtime)
                    .cloned()
            },
            isolation,
        );
        Target {
            reference: reference.clone(),
            origins: uses.iter().map(|u| manifest_origin(u)).collect(),
            scope: Some(Box::new(Scope {
                policy,
                placement,
                runs_nowhere,
            })),
            landings,
        }
    }

    /// When `uses` (landing on no host) are a Windows workload — their pods select Windows
    /// hosts by labels and no Linux host, or tolerate the Windows hosts' taints — what keeps
    /// them off each Windows host, once each (`None` for another workload, or without Windows
    /// hosts).
    fn kept_off_windows(&self, uses: &[&ImageUse]) -> Option<String> {
        let windows: Vec<&Host> = self
            .hosts
            .iter()
            .filter(|h| h.platform.is_windows())
            .collect();
        let linux: Vec<&Host> = self
            .hosts
            .iter()
            .filter(|h| !h.platform.is_windows())
            .collect();
        let taints = self.policy.taints(true);
        let meant = |u: &&ImageUse| {
            let selects = |h: &&Host| u.placement.admits(&host_labels(h));
            let by_labels = windows.iter().any(selects) && !linux.iter().any(selects);
            let tolerates = !taints.is_empty()
                && (taints.iter()).all(|t| u.placement.tolerations.iter().any(|o| o.tolerates(t)));
            by_labels || tolerates
        };
        if windows.is_empty() || !uses.iter().all(meant) {
            return None;
        }
        let mut why = BTreeSet::new();
        for u in uses {
            for h in &windows {
                why.extend(self.place(u, h).1.into_iter().map(|(_, r)| match r {
                    PlacementRefusal::Labels => {
                        "its node selector and affinity match no Windows host's labels".to_string()
                    }
                    r => r.to_string(),
                }));
            }
        }
        Some(why.into_iter().collect::<Vec<_>>().join("; "))
    }

    /// The nodes skipped (`--nodes`: runtime or Windows build unreadable) some of `uses` would
    /// land on, each with why it is skipped, in the list's order.
    fn skipped_landings(&self, uses: &[&ImageUse]) -> Vec<String> {
        self.skipped
            .iter()
            .filter_map(|node| {
                let why = node.skipped.as_ref()?;
                uses.iter()
                    .any(|u| u.placement.lands_on(node).is_ok())
                    .then(|| why.clone())
            })
            .collect()
    }

    /// One note per workload and taint (or cordon, or the kubelet's check of the pod's own
    /// `kubernetes.io/os` label) that keeps its pods off hosts or nodes whose labels would take
    /// them: `DaemonSet ns/name: no pod on 4 nodes (…): it does not tolerate the taint
    /// os=Windows:NoSchedule`.
    fn notes(&self, uses: &[ImageUse]) -> Vec<Note> {
        let mut kept_off: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
        for u in uses {
            let o = &u.origin;
            let workload = match &o.namespace {
                Some(ns) => format!("{} {ns}/{}", o.kind, o.name),
                None => format!("{} {}", o.kind, o.name),
            };
            for h in &self.hosts {
                for (what, why) in self.place(u, h).1 {
                    let kept = matches!(
                        why,
                        PlacementRefusal::Taint(_)
                            | PlacementRefusal::Unschedulable
                            | PlacementRefusal::OsLabel(_)
                    );
                    if kept {
                        let key = (workload.clone(), why.to_string());
                        kept_off.entry(key).or_default().insert(what);
                    }
                }
            }
        }
        kept_off
            .into_iter()
            .map(|((workload, why), hosts)| {
                let noun = match (self.cluster.is_some(), hosts.len()) {
                    (true, 1) => "node",
                    (true, _) => "nodes",
                    (false, 1) => "host",
                    (false, _) => "hosts",
                };
                let hosts: Vec<String> = hosts.into_iter().collect();
                Note::KeptOff(format!(
                    "{workload}: its pods are not judged for {} {noun} ({}): {why}",
                    hosts.len(),
                    hosts.join(", ")
                ))
            })
            .collect()
    }
}

/// The per-node answer of a run with `--nodes` and pod templates, for one target: what each
/// of its `landings` gets on its node's host row in `report` (the target's report). An image
/// that could not be judged on a row (its report has no row for the node) fails there with
/// its first error finding's rule.
pub fn placements_of(landings: &[Landing], report: &ImageReport) -> Vec<NodePlacement> {
    let r = report;
    landings
        .iter()
        .map(|l| {
            let row = r.hosts.iter().find(|h| h.nodes.contains(&l.node));
            let status = match row {
                Some(h) => h.status,
                None => match r
                    .findings
                    .iter()
                    .find(|f| f.severity == crate::engine::Severity::Error)
                {
                    Some(f) => HostStatus::Fails(f.rule),
                    None => HostStatus::Ok,
                },
            };
            let o = &l.origin;
            NodePlacement {
                node: l.node.clone(),
                kind: o.kind.clone(),
                namespace: o.namespace.clone(),
                name: o.name.clone(),
                container: o.container.clone(),
                init: o.init,
                image: r.reference.clone(),
                platform: row.map(|h| h.platform.clone()),
                runtime: row.and_then(|h| h.runtime),
                // Named once the run ends ([`name_runtimes`]).
                runtime_version: None,
                runtime_reason: None,
                selected: row.and_then(|h| h.selected.clone()),
                status,
            }
        })
        .collect()
}

/// Names each placement's node runtime and why its profile, from the nodes' `runtimes`.
pub fn name_runtimes(placements: &mut [NodePlacement], runtimes: &[NodeRuntime]) {
    for p in placements {
        let runtime = runtimes
            .iter()
            .find(|rt| rt.nodes.binary_search(&p.node).is_ok());
        p.runtime_version = runtime.map(|rt| rt.version.clone());
        p.runtime_reason = runtime.map(|rt| rt.reason.clone());
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
pub(super) fn identity(reference: &ImageRef) -> String {
    match reference {
        ImageRef::Registry(r) => match &r.digest {
            Some(d) => format!("{}/{}@{d}", r.registry, r.repository),
            None => r.to_string(),
        },
        ImageRef::Layout(_) => reference.to_string(),
    }
}

/// How many targets [`merge`] merges between two looks at the deadline: a look costs about
/// as much as merging a target, so the deadline is read rarely and the merge still stops
/// within a few milliseconds of it.
pub const MERGE_CHECK_EVERY: usize = 4096;

/// The deadline (`--timeout`) passed while [`merge`] merged the targets: `done` of `total`
/// were merged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("merging {total} references into one target per image ({done} merged)")]
pub struct MergeOverdue {
    /// The targets merged before it stopped.
    pub done: usize,
    /// The targets it was given.
    pub total: usize,
}

/// One target per image (the same repository and digest when pinned, else the same
/// reference), in order of first appearance: origins joined; an image also named without a
/// scope (typed, listed, a release component) is judged for every host. Stops once
/// `deadline` has passed (looked at every [`MERGE_CHECK_EVERY`] targets).
pub fn merge(targets: Vec<Target>, deadline: Option<Instant>) -> Result<Vec<Target>, MergeOverdue> {
    merge_by(targets, deadline, identity)
}

/// [`merge`] with `key` telling which references are the same image: `key` is read once per
/// target and looked up in a hash map, and the origins a target already has are kept in a
/// set once another target joins it, so `n` targets merge in O(n log n). The merge works in
/// place: each image's first target moves forward, the others are emptied into it, and the
/// list is cut to the images — no second list of targets is made.
fn merge_by<K: Eq + Hash>(
    mut targets: Vec<Target>,
    deadline: Option<Instant>,
    mut key: impl FnMut(&ImageRef) -> K,
) -> Result<Vec<Target>, MergeOverdue> {
    let total = targets.len();
    // The origins of `targets[i]` (an image kept), made when a second target joins it.
    let mut joined: HashMap<usize, BTreeSet<Origin>> = HashMap::new();
    let mut index: HashMap<K, usize> = HashMap::with_capacity(total);
    // targets[..kept]: one per image so far, in order of first appearance.
    let mut kept = 0;
    for done in 0..total {
        if done % MERGE_CHECK_EVERY == 0 && deadline.is_some_and(|d| Instant::now() >= d) {
            return Err(MergeOverdue { done, total });
        }
        match index.entry(key(&targets[done].reference)) {
            Entry::Occupied(e) => {
                let (images, rest) = targets.split_at_mut(done);
                let (m, t) = (&mut images[*e.get()], &mut rest[0]);
                let seen = joined
                    .entry(*e.get())
                    .or_insert_with(|| m.origins.iter().cloned().collect());
                for o in std::mem::take(&mut t.origins) {
                    if seen.insert(o.clone()) {
                        m.origins.push(o);
                    }
                }
                if t.scope.is_none() {
                    m.scope = None;
                }
                m.landings.append(&mut t.landings);
            }
            Entry::Vacant(e) => {
                e.insert(kept);
                // targets[kept..done] are emptied duplicates: one of them takes this place.
                targets.swap(kept, done);
                kept += 1;
            }
        }
    }
    targets.truncate(kept);
    targets.shrink_to_fit();
    Ok(targets)
}

#[cfg(test)]
mod tests;
