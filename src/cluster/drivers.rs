//! The Linux and Windows halves of one CSI driver, found in pod templates
//! (`--from-manifests`), release components (`--from-release`) or the policy (`drivers:`).
//! Pure: which workloads and components pair, and why. The rules, in order (docs/cluster.md,
//! "One driver, both halves"):
//!
//! 1. the policy's `drivers:` entries name both halves;
//! 2. DaemonSets that name the same CSI driver — in a flag (`--drivername=`, `--driver-name=`,
//!    `--csi-driver=`, as azurefile-csi-driver's and other drivers' `main.go` define them) or
//!    in the kubelet plugin path their registrar or driver is given
//!    (`/var/lib/kubelet/plugins/NAME/csi.sock`, `C:\var\lib\kubelet\plugins\NAME\csi.sock`,
//!    node-driver-registrar's `--kubelet-registration-path`) — one for Linux nodes and one for
//!    Windows nodes;
//! 3. DaemonSets named `X` and `X-windows` (or `X-win`) in one namespace (vsphere-csi-driver's
//!    `vsphere-csi-node` / `vsphere-csi-node-windows`, OpenShift's
//!    `azure-file-csi-driver-node` / `azure-file-csi-driver-node-windows`, azurefile-csi-driver's
//!    `csi-azurefile-node` / `csi-azurefile-node-win`);
//! 4. release components `X` and `X-windows`; and the component `X` is the target of the
//!    DaemonSets `X-node` / `X-node-windows` (OpenShift's operators name the node DaemonSet
//!    after the driver's component and fill its `csi-driver` container with it, library-go's
//!    `${DRIVER_IMAGE}`).

use std::collections::BTreeMap;

use crate::cluster::manifests::ImageUse;
use crate::cluster::nodes::LABEL_OS;
use crate::policy::{DriverPolicy, SkewSeverity};
use crate::reference::ImageRef;

/// The container OpenShift's CSI operators run the driver in (library-go fills it with
/// `${DRIVER_IMAGE}`, the driver's release component).
pub const DRIVER_CONTAINER: &str = "csi-driver";

/// A DaemonSet of the pod templates: its name, the nodes it is for, the driver it names and
/// the image of each container.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workload {
    /// `NAMESPACE/NAME`, or `NAME` without a namespace.
    pub name: String,
    /// `linux` or `windows`, when its pods are for one OS only.
    pub os: Option<&'static str>,
    /// The CSI driver it names, if any.
    pub driver: Option<String>,
    /// Each container's name and image, in the template's order.
    pub containers: Vec<(String, ImageRef)>,
}

impl Workload {
    /// `DaemonSet NAMESPACE/NAME`.
    pub fn object(&self) -> String {
        format!("DaemonSet {}", self.name)
    }

    /// The name without its namespace.
    fn short(&self) -> &str {
        self.name.rsplit('/').next().unwrap_or(&self.name)
    }

    /// The namespace, if any.
    fn namespace(&self) -> Option<&str> {
        self.name.rsplit_once('/').map(|(ns, _)| ns)
    }

    /// Is it the workload the policy names `wanted` (`NAME` or `NAMESPACE/NAME`)?
    fn is(&self, wanted: &str) -> bool {
        self.name == wanted || (!wanted.contains('/') && self.short() == wanted)
    }
}

/// The OS a pod's placement is for: `linux` or `windows` when its node selector and affinity
/// admit nodes of that OS only; else by its name (`…-windows`, `…-win`: Windows).
fn os_of(u: &ImageUse) -> Option<&'static str> {
    let labels = |os: &str| BTreeMap::from([(LABEL_OS, os.to_string())]);
    match (
        u.placement.admits(&labels("linux")),
        u.placement.admits(&labels("windows")),
    ) {
        (true, false) => Some("linux"),
        (false, true) => Some("windows"),
        _ if windows_base(&u.origin.name).is_some() => Some("windows"),
        _ => None,
    }
}

/// `X` for a Windows name `X-windows` or `X-win`.
fn windows_base(name: &str) -> Option<&str> {
    name.strip_suffix("-windows")
        .or_else(|| name.strip_suffix("-win"))
}

/// The DaemonSets of `uses`, in order of first appearance; init containers left out.
pub fn workloads(uses: &[ImageUse]) -> Vec<Workload> {
    let mut out: Vec<Workload> = Vec::new();
    for u in uses.iter().filter(|u| u.origin.kind == "DaemonSet") {
        let o = &u.origin;
        let name = match &o.namespace {
            Some(ns) => format!("{ns}/{}", o.name),
            None => o.name.clone(),
        };
        let at = match out.iter().position(|w| w.name == name) {
            Some(at) => at,
            None => {
                out.push(Workload {
                    name,
                    os: os_of(u),
                    driver: u.driver.clone(),
                    containers: vec![],
                });
                out.len() - 1
            }
        };
        if !o.init {
            out[at]
                .containers
                .push((o.container.clone(), u.image.clone()));
        }
    }
    out
}

/// Two DaemonSets of one driver, and why they pair.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkloadPair {
    /// The driver's name.
    pub name: String,
    /// Why they pair, in words.
    pub paired_by: String,
    /// The Linux node plugin.
    pub linux: Workload,
    /// The Windows node plugin.
    pub windows: Workload,
    /// The container compared (`drivers[].container`); `None`: every name both run.
    pub container: Option<String>,
    /// The release component(s) of the target halves, Linux then Windows, when known.
    pub components: Option<(String, String)>,
    /// How serious a skew is.
    pub skew: SkewSeverity,
}

impl WorkloadPair {
    /// The containers compared: `(name, Linux image, Windows image)` for the policy's
    /// container, else for each container name both workloads run.
    pub fn containers(&self) -> Vec<(String, ImageRef, ImageRef)> {
        let image = |w: &Workload, c: &str| {
            (w.containers.iter())
                .find(|(name, _)| name == c)
                .map(|(_, i)| i.clone())
        };
        (self.linux.containers.iter())
            .filter(|(c, _)| self.container.as_ref().is_none_or(|want| want == c))
            .filter_map(|(c, l)| Some((c.clone(), l.clone(), image(&self.windows, c)?)))
            .collect()
    }
}

/// Pairs as they are taken: which workloads are used.
struct Pairing<'a> {
    workloads: &'a [Workload],
    used: Vec<bool>,
    out: Vec<WorkloadPair>,
}

impl Pairing<'_> {
    /// Pairs Linux workload `l` with Windows workload `w` as driver `name`.
    fn take(&mut self, (l, w): (usize, usize), name: &str, by: String, p: Option<&DriverPolicy>) {
        self.used[l] = true;
        self.used[w] = true;
        self.out.push(WorkloadPair {
            name: name.to_string(),
            paired_by: by,
            linux: self.workloads[l].clone(),
            windows: self.workloads[w].clone(),
            container: p.and_then(|p| p.container.clone()),
            components: p.and_then(policy_components),
            skew: p.and_then(|p| p.skew).unwrap_or_default(),
        });
    }

    /// The workloads for `os` not paired yet.
    fn free(&self, os: &str) -> Vec<usize> {
        (0..self.workloads.len())
            .filter(|&i| !self.used[i] && self.workloads[i].os == Some(os))
            .collect()
    }
}

/// The driver pairs among `workloads`: the policy's, then by driver name, then by names;
/// a workload pairs once.
pub fn pair_workloads(workloads: &[Workload], policy: &[DriverPolicy]) -> Vec<WorkloadPair> {
    let mut p = Pairing {
        workloads,
        used: vec![false; workloads.len()],
        out: Vec::new(),
    };
    let find = |want: &Option<String>| {
        let want = want.as_deref()?;
        workloads.iter().position(|w| w.is(want))
    };
    for d in policy {
        if let (Some(l), Some(w)) = (find(&d.linux.workload), find(&d.windows.workload)) {
            p.take((l, w), &d.name, "the policy's drivers".to_string(), Some(d));
        }
    }
    for l in p.free("linux") {
        let Some(driver) = &workloads[l].driver else {
            continue;
        };
        let same: Vec<usize> = (p.free("windows").into_iter())
            .filter(|&w| workloads[w].driver.as_ref() == Some(driver))
            .collect();
        if let [w] = same[..] {
            let by = format!("both name the CSI driver {driver}");
            p.take((l, w), driver, by, None);
        }
    }
    for w in p.free("windows") {
        let win = &workloads[w];
        let Some(base) = windows_base(win.short()) else {
            continue;
        };
        let twin = (p.free("linux").into_iter())
            .find(|&l| workloads[l].short() == base && workloads[l].namespace() == win.namespace());
        if let Some(l) = twin {
            let by = format!("names {base} and {}", win.short());
            p.take((l, w), base, by, None);
        }
    }
    p.out
}

/// The components a policy entry names for both halves (one named: both halves ship in it).
fn policy_components(p: &DriverPolicy) -> Option<(String, String)> {
    let (l, w) = (p.linux.component.clone(), p.windows.component.clone());
    match (l, w) {
        (Some(l), Some(w)) => Some((l, w)),
        (Some(one), None) | (None, Some(one)) => Some((one.clone(), one)),
        (None, None) => None,
    }
}

/// The release components of a pair's target halves: the policy's, else the component `X`
/// (and `X-windows` when the release has it) for the DaemonSets `X-node` / `X-node-windows`.
pub fn target_components(pair: &WorkloadPair, release: &[String]) -> Option<(String, String)> {
    if let Some(c) = &pair.components {
        return Some(c.clone());
    }
    let base = pair.linux.short().strip_suffix("-node")?;
    let has = |n: &str| release.iter().any(|c| c == n);
    if !has(base) {
        return None;
    }
    let windows = format!("{base}-windows");
    Some(match has(&windows) {
        true => (base.to_string(), windows),
        false => (base.to_string(), base.to_string()),
    })
}

/// Release components that pair without DaemonSets: the policy's entries that name
/// components, and `X` with `X-windows`: `(driver, Linux component, Windows component, why,
/// skew)`.
pub fn pair_components(
    release: &[String],
    policy: &[DriverPolicy],
) -> Vec<(String, String, String, String, SkewSeverity)> {
    let mut out = Vec::new();
    for p in policy {
        if let Some((l, w)) = policy_components(p) {
            let by = "the policy's drivers".to_string();
            out.push((p.name.clone(), l, w, by, p.skew.unwrap_or_default()));
        }
    }
    for w in release {
        let Some(base) = windows_base(w) else {
            continue;
        };
        let paired = out.iter().any(|(_, l, win, ..)| l == base || win == w);
        if release.iter().any(|c| c == base) && !paired {
            let by = format!("components {base} and {w}");
            out.push((
                base.to_string(),
                base.to_string(),
                w.clone(),
                by,
                SkewSeverity::default(),
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests;
