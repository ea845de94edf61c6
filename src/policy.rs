//! Policies: which hosts a reference must serve, under which runtimes, and how Windows pods are
//! isolated.
//!
//! Policy files are YAML (`policies/*.yaml`, embedded in the binary, or any file). Unknown keys
//! and impossible values are rejected while parsing, so the error carries the file, line and
//! column of the offending key.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::io::ErrorKind::NotFound;
use std::path::Path;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::binary::ModuleVersion;
use crate::platform::{Platform, RuntimeProfile, WindowsVersion, build_name};
use crate::scheduling::Taint;

/// Policies compiled into the binary, by name.
pub const EMBEDDED: [(&str, &str); 4] = [
    ("openshift", include_str!("../policies/openshift.yaml")),
    (
        "openshift-hostprocess",
        include_str!("../policies/openshift-hostprocess.yaml"),
    ),
    (
        "openshift-ltsc2025",
        include_str!("../policies/openshift-ltsc2025.yaml"),
    ),
    ("linux-only", include_str!("../policies/linux-only.yaml")),
];

/// The policy used when none is named.
pub const DEFAULT_POLICY: &str = "openshift";

/// Architectures a policy may name.
const KNOWN_ARCHS: [&str; 9] = [
    "amd64", "arm64", "arm", "386", "ppc64le", "s390x", "riscv64", "mips64le", "loong64",
];

/// Whether `s` is an architecture a policy may name.
pub fn is_known_arch(s: &str) -> bool {
    KNOWN_ARCHS.contains(&s)
}

/// A CPU architecture, validated.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Arch(String);

impl<'de> Deserialize<'de> for Arch {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        if KNOWN_ARCHS.contains(&s.as_str()) {
            Ok(Arch(s))
        } else {
            Err(serde::de::Error::custom(format!(
                "unknown architecture '{s}' (known: {})",
                KNOWN_ARCHS.join(", ")
            )))
        }
    }
}

impl fmt::Display for Arch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A Windows build number, validated (Windows Server 2016, 14393, is the oldest with
/// containers).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct WindowsBuild(pub u16);

impl<'de> Deserialize<'de> for WindowsBuild {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let n = u64::deserialize(d)?;
        match u16::try_from(n) {
            Ok(b) if b >= 14393 => Ok(WindowsBuild(b)),
            _ => Err(serde::de::Error::custom(format!(
                "{n} is not a Windows build with container support \
                 (expected a build number such as 17763, 20348 or 26100)"
            ))),
        }
    }
}

impl fmt::Display for WindowsBuild {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// Deserialises a non-empty list without repeats (shared by policy and build-plan files).
pub(crate) fn unique<'de, D, T>(d: D) -> Result<Vec<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de> + Ord + Clone + fmt::Display,
{
    let items = Vec::<T>::deserialize(d)?;
    if items.is_empty() {
        return Err(serde::de::Error::custom("the list must not be empty"));
    }
    let mut seen = BTreeSet::new();
    for item in &items {
        if !seen.insert(item.clone()) {
            return Err(serde::de::Error::custom(format!("{item} is listed twice")));
        }
    }
    Ok(items)
}

/// The `linux:` section.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinuxPolicy {
    /// Architectures every reference must serve.
    #[serde(deserialize_with = "unique")]
    pub architectures: Vec<Arch>,
    /// Runtimes the Linux nodes run: `cri-o` on OpenShift, a containerd generation on plain
    /// Kubernetes (default: the newest containerd).
    #[serde(default = "default_runtimes", deserialize_with = "unique")]
    pub runtimes: Vec<RuntimeProfile>,
    /// Taints every Linux host carries (`key[=value]:Effect`): a pod that does not tolerate
    /// one is not judged for the Linux hosts (without `--nodes`; with it, each node's own).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub taints: Vec<Taint>,
}

/// How the Windows pods that run the image are isolated (`windows.isolation`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Isolation {
    /// Process-isolated containers: the image's build must be compatible with the host's.
    #[default]
    Process,
    /// HostProcess pods (`securityContext.windowsOptions.hostProcess: true`): they run on the
    /// host itself, so any pulled build runs; pull-time matching is unchanged.
    Hostprocess,
}

impl Isolation {
    /// The name as policies write it.
    pub fn name(self) -> &'static str {
        match self {
            Isolation::Process => "process",
            Isolation::Hostprocess => "hostprocess",
        }
    }
}

impl fmt::Display for Isolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

/// The `windows:` section.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WindowsPolicy {
    /// Architectures of the Windows nodes.
    #[serde(deserialize_with = "unique")]
    pub architectures: Vec<Arch>,
    /// Windows builds of the nodes.
    #[serde(deserialize_with = "unique")]
    pub builds: Vec<WindowsBuild>,
    /// How the pods are isolated (default `process`).
    #[serde(default)]
    pub isolation: Isolation,
    /// Taints every Windows host carries (`os=Windows:NoSchedule` on OpenShift, set by
    /// WMCO): a pod that does not tolerate one is not judged for the Windows hosts (without
    /// `--nodes`; with it, each node's own).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub taints: Vec<Taint>,
    /// The pause image every Windows pod pulls first (`windows.sandbox_image`: WMCO's
    /// containerd `sandbox_image`; `none` skips it): judged wherever Windows nodes are in
    /// scope. Absent: none.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "sandbox_image"
    )]
    pub sandbox_image: Option<String>,
    /// The CSI Proxy the Windows nodes run and the lowest each driver supports
    /// (`windows.csi_proxy`), judged against the csi-proxy client a driver is built with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub csi_proxy: Option<CsiProxyPolicy>,
}

/// The `windows.csi_proxy` section: the CSI Proxy (kubernetes-csi/csi-proxy) the Windows nodes
/// run, which serves the privileged host work of the CSI node plugins over named pipes, one per
/// API group version.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CsiProxyPolicy {
    /// The CSI Proxy release the nodes run (`v1.1.2`). Absent: learned from the csi-proxy
    /// DaemonSet of `--from-manifests` (with `--deep`), else unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<ModuleVersion>,
    /// The lowest CSI Proxy release each driver supports, by image name (the repository's
    /// last path component, a release component, a pod template's container or workload
    /// name), e.g. `azure-file-csi-driver: v1.1.0`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub minimum: BTreeMap<String, ModuleVersion>,
    /// Where `version` was learned when a run found it rather than the policy (the csi-proxy
    /// DaemonSet's image).
    #[serde(skip)]
    pub learned_from: Option<String>,
}

impl CsiProxyPolicy {
    /// The release the nodes run and where it was read (`policy windows.csi_proxy.version`, or
    /// the DaemonSet's image), when known.
    pub fn running(&self) -> Option<(&ModuleVersion, String)> {
        let version = self.version.as_ref()?;
        let source = self
            .learned_from
            .clone()
            .unwrap_or_else(|| "policy windows.csi_proxy.version".to_string());
        Some((version, source))
    }
}

/// Checks a `windows.sandbox_image` value: `none`, or a reference.
fn check_sandbox_image(s: &str) -> Result<(), String> {
    match s == "none" {
        true => Ok(()),
        false => s.parse::<crate::reference::ImageRef>().map(drop).map_err(|e| {
            format!("windows.sandbox_image: {e} (give a reference, or none to skip the sandbox image)")
        }),
    }
}

/// Deserialises `windows.sandbox_image`: `none`, or a reference.
fn sandbox_image<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let s = String::deserialize(d)?;
    check_sandbox_image(&s).map_err(serde::de::Error::custom)?;
    Ok(Some(s))
}

/// A policy: the hosts a reference must serve.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Policy {
    /// Short name.
    pub name: String,
    /// One line for humans.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Linux hosts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub linux: Option<LinuxPolicy>,
    /// Windows hosts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub windows: Option<WindowsPolicy>,
    /// containerd generations the Windows nodes may run (`cri-o` is refused: it runs no
    /// Windows nodes; Linux runtimes are `linux.runtimes`).
    #[serde(default = "default_runtimes", deserialize_with = "unique")]
    pub runtimes: Vec<RuntimeProfile>,
    /// What `--from-release` verifies of a release payload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub release: Option<ReleasePolicy>,
    /// What `verify --deep` reads beyond the Windows layers (`deep: {linux: false}` leaves
    /// Linux entries out; they are read by default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deep: Option<DeepPolicy>,
    /// How serious entries of one list built from different source revisions are
    /// (`source-skew`; default `warning`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_skew: Option<SkewSeverity>,
    /// The release check of signatures (`signatures: {required: true}`, as `verify
    /// --signatures`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signatures: Option<SignaturesPolicy>,
    /// CSI drivers whose Linux and Windows halves must come from one source revision and
    /// version (`driver-skew`), named where pairing by names would not find them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub drivers: Vec<DriverPolicy>,
    /// The hosts read from a cluster (`--nodes`), or a scope's hosts, replacing those the
    /// sections name.
    #[serde(skip)]
    pub node_hosts: Option<Vec<Host>>,
}

/// The `deep:` section: what `verify --deep` reads beyond the Windows layers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeepPolicy {
    /// Also read the layers of Linux entries, to find and check their entrypoint (the
    /// default; `false` leaves them out).
    #[serde(default = "read_linux")]
    pub linux: bool,
}

impl Default for DeepPolicy {
    fn default() -> Self {
        DeepPolicy {
            linux: read_linux(),
        }
    }
}

/// `deep.linux` when the policy does not say: Linux entries are read.
fn read_linux() -> bool {
    true
}

/// The `signatures:` section: the release check of cosign signatures and attestations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SignaturesPolicy {
    /// The index and every entry a host pulls must carry a cosign signature (as `verify
    /// --signatures`).
    #[serde(default)]
    pub required: bool,
    /// They must carry an in-toto attestation too (default true).
    #[serde(default = "attestations_by_default")]
    pub attestations: bool,
}

fn attestations_by_default() -> bool {
    true
}

/// One entry of `drivers:`: a CSI driver, where its Linux and Windows node plugins are found,
/// and how serious a skew between them is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DriverPolicy {
    /// The driver's name, as reports show it (`file.csi.azure.com`).
    pub name: String,
    /// Where its Linux node plugin is.
    pub linux: DriverSide,
    /// Where its Windows node plugin is.
    pub windows: DriverSide,
    /// The container of the two workloads that runs the driver (`csi-driver`); without it,
    /// every container name both workloads run is compared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container: Option<String>,
    /// How serious a `driver-skew` of this driver is (default `warning`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skew: Option<SkewSeverity>,
}

/// One half of a [`DriverPolicy`]: the workload (`--from-manifests`) and the release
/// component (`--from-release`) that ship it; at least one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DriverSide {
    /// The DaemonSet's name, or `NAMESPACE/NAME`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload: Option<String>,
    /// The release component (a tag of the payload's `image-references`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub component: Option<String>,
}

/// The severity of a `source-skew` finding (`source_skew:`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SkewSeverity {
    /// Reported, the verdict unchanged (the default).
    #[default]
    Warning,
    /// The list fails.
    Error,
}

/// The `release:` section: the components of an OpenShift release payload the policy is about.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReleasePolicy {
    /// Tag names of the payload's `image-references` (e.g. `azure-file-csi-driver`) that
    /// `--from-release` verifies.
    #[serde(deserialize_with = "unique")]
    pub components: Vec<String>,
}

impl DriverPolicy {
    /// What makes this entry unusable, if anything: an empty name, or a half that names
    /// neither a workload nor a component.
    fn problem(&self) -> Option<String> {
        if self.name.trim().is_empty() {
            return Some("'drivers' has an entry without a name".to_string());
        }
        let empty = |side: &DriverSide| {
            let named = |v: &Option<String>| v.as_deref().is_some_and(|v| !v.trim().is_empty());
            !named(&side.workload) && !named(&side.component)
        };
        for (half, side) in [("linux", &self.linux), ("windows", &self.windows)] {
            if empty(side) {
                return Some(format!(
                    "'drivers' entry {}: '{half}' names neither a workload nor a component",
                    self.name
                ));
            }
        }
        None
    }
}

fn default_runtimes() -> Vec<RuntimeProfile> {
    vec![RuntimeProfile::DEFAULT]
}

/// A policy that cannot be loaded, naming the file, the problem and its cause.
#[derive(Debug, Clone, thiserror::Error)]
#[error("policy {origin}: {reason}")]
pub struct PolicyError {
    /// `embedded:NAME` or the file path.
    pub origin: String,
    /// What is wrong, with line and column when known.
    pub reason: String,
    /// The error behind it, if another library reported it.
    #[source]
    pub source: Option<PolicyCause>,
}

/// The error behind a [`PolicyError`].
#[derive(Debug, Clone, thiserror::Error)]
pub enum PolicyCause {
    /// The file cannot be read.
    #[error(transparent)]
    Read(Arc<std::io::Error>),
    /// The text is not a policy.
    #[error(transparent)]
    Yaml(Arc<serde_yaml_ng::Error>),
}

/// A host a policy requires: its platform and a label for reports; for hosts read from a
/// cluster, also the runtime its nodes run and the nodes it stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Host {
    /// The node's platform (Windows: `10.0.<build>`, no revision).
    pub platform: Platform,
    /// The runtime profile of its nodes, when known (hosts read from a cluster); `None`: the
    /// policy's runtimes.
    pub runtime: Option<RuntimeProfile>,
    /// The names of the nodes the host stands for (hosts read from a cluster), sorted; empty
    /// for a policy's hosts.
    pub nodes: Vec<String>,
}

/// How many node names a message spells out before it says how many more there are.
const NAMED_NODES: usize = 5;

impl Host {
    /// A policy's host: a platform, any runtime of the policy, no nodes.
    pub fn of(platform: Platform) -> Host {
        Host {
            platform,
            runtime: None,
            nodes: vec![],
        }
    }

    /// The host as shown in reports, e.g. `windows/amd64:10.0.17763`.
    pub fn label(&self) -> String {
        self.platform.to_string()
    }

    /// The host as findings name it: the label, or for hosts read from a cluster, its nodes
    /// first, e.g. `2 nodes (winworker-4kq8x, winworker-9tbzm) on windows/amd64:10.0.17763`.
    pub fn subject(&self) -> String {
        let n = self.nodes.len();
        if n == 0 {
            return self.label();
        }
        let mut names = self.nodes[..n.min(NAMED_NODES)].join(", ");
        if n > NAMED_NODES {
            names.push_str(&format!(" and {} more", n - NAMED_NODES));
        }
        let noun = if n == 1 { "node" } else { "nodes" };
        format!("{n} {noun} ({names}) on {}", self.label())
    }
}

impl Policy {
    /// Parses policy YAML; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Policy, PolicyError> {
        let err = |reason: String| PolicyError {
            origin: origin.to_string(),
            reason,
            source: None,
        };
        crate::yaml::check_yaml(text).map_err(|e| err(e.to_string()))?;
        let policy: Policy = serde_yaml_ng::from_str(text).map_err(|e| {
            let reason = match e.location() {
                Some(l) if !e.to_string().contains("line ") => {
                    format!("line {}, column {}", l.line(), l.column())
                }
                _ => "cannot parse".to_string(),
            };
            PolicyError {
                source: Some(PolicyCause::Yaml(Arc::new(e))),
                ..err(reason)
            }
        })?;
        if policy.name.trim().is_empty() {
            return Err(err("'name' must not be empty".to_string()));
        }
        if policy.runtimes.contains(&RuntimeProfile::CRI_O) {
            return Err(err(
                "'runtimes' lists the Windows nodes' runtimes and cri-o runs no Windows nodes: \
                 list it under 'linux: runtimes:'"
                    .to_string(),
            ));
        }
        if let Some(docker) = policy.linux_runtimes().into_iter().find(|p| p.is_docker()) {
            return Err(err(format!(
                "'linux: runtimes' lists {docker}, which follows Docker Engine's Windows pull \
                 only (moby's Linux pull is not modelled): list a containerd profile or cri-o"
            )));
        }
        if policy.linux.is_none() && policy.windows.is_none() {
            return Err(err(
                "the policy names no hosts: add a 'linux:' or 'windows:' section".to_string(),
            ));
        }
        if policy
            .release_components()
            .iter()
            .any(|c| c.trim().is_empty())
        {
            return Err(err(
                "'release.components' names an empty component (each is a tag name of the \
                 payload's image-references)"
                    .to_string(),
            ));
        }
        if let Some(reason) = policy.drivers.iter().find_map(DriverPolicy::problem) {
            return Err(err(reason));
        }
        Ok(policy)
    }

    /// Does the policy require signatures (`signatures.required`)?
    pub fn signatures_required(&self) -> bool {
        self.signatures.is_some_and(|s| s.required)
    }

    /// Must signed manifests be attested too (`signatures.attestations`, default true)?
    pub fn attestations_required(&self) -> bool {
        self.signatures.is_none_or(|s| s.attestations)
    }

    /// Does `verify --deep` read the layers of Linux entries too (`deep.linux`, true unless
    /// the policy says `false`)?
    pub fn deep_linux(&self) -> bool {
        self.deep.unwrap_or_default().linux
    }

    /// Finds a policy: an embedded name, else a file path.
    pub fn load(name_or_path: &str) -> Result<Policy, PolicyError> {
        if let Some((name, text)) = EMBEDDED.iter().find(|(n, _)| *n == name_or_path) {
            return Policy::parse(text, &format!("embedded:{name}"));
        }
        let path = Path::new(name_or_path);
        let read = crate::input::read_file(path, crate::input::DEFAULT_MAX_INPUT_BYTES);
        match read {
            Ok(text) => Policy::parse(&text, name_or_path),
            Err(e) if e.source.as_ref().map(std::io::Error::kind) == Some(NotFound) => {
                Err(PolicyError {
                    origin: name_or_path.to_string(),
                    reason: format!(
                        "no embedded policy has this name ({}) and no such file exists",
                        EMBEDDED.map(|(n, _)| n).join(", ")
                    ),
                    source: None,
                })
            }
            Err(e) => Err(PolicyError {
                origin: name_or_path.to_string(),
                reason: e.reason,
                source: e.source.map(|e| PolicyCause::Read(Arc::new(e))),
            }),
        }
    }

    /// The default policy.
    pub fn default_policy() -> Policy {
        Policy::load(DEFAULT_POLICY).expect("the embedded default policy is valid")
    }

    /// The policy with `hosts` (read from a cluster) in place of its own: its sections now
    /// name the hosts' architectures, builds and runtimes; the isolation mode stays.
    pub fn with_hosts(mut self, hosts: Vec<Host>) -> Policy {
        let (windows, linux): (Vec<&Host>, Vec<&Host>) =
            hosts.iter().partition(|h| h.platform.is_windows());
        let archs = |hs: &[&Host]| uniq(hs.iter().map(|h| Arch(h.platform.architecture.clone())));
        let runtimes = |hs: &[&Host]| uniq(hs.iter().filter_map(|h| h.runtime));
        let linux_runtimes = match runtimes(&linux) {
            known if known.is_empty() => self.linux_runtimes(),
            known => known,
        };
        let (linux_taints, windows_taints) = (self.taints(false), self.taints(true));
        self.linux = (!linux.is_empty()).then(|| LinuxPolicy {
            architectures: archs(&linux),
            runtimes: linux_runtimes,
            taints: linux_taints,
        });
        let isolation = self.isolation();
        let sandbox_image = self.windows.as_ref().and_then(|w| w.sandbox_image.clone());
        let csi_proxy = self.windows.as_ref().and_then(|w| w.csi_proxy.clone());
        self.windows = (!windows.is_empty()).then(|| WindowsPolicy {
            architectures: archs(&windows),
            builds: uniq(
                windows
                    .iter()
                    .filter_map(|h| h.platform.windows_version().map(|v| WindowsBuild(v.build))),
            ),
            isolation,
            sandbox_image,
            taints: windows_taints,
            csi_proxy,
        });
        let windows_runtimes = runtimes(&windows);
        if !windows_runtimes.is_empty() {
            self.runtimes = windows_runtimes;
        }
        self.node_hosts = Some(hosts);
        self
    }

    /// The taints the policy gives its Windows (`windows`) or Linux hosts.
    pub fn taints(&self, windows: bool) -> Vec<Taint> {
        match windows {
            true => self.windows.as_ref().map(|w| w.taints.clone()),
            false => self.linux.as_ref().map(|l| l.taints.clone()),
        }
        .unwrap_or_default()
    }

    /// The policy for an image whose pods land only on the hosts `keep` admits, isolated as
    /// `isolation` on Windows: its hosts (a cluster's or its own) narrowed, runtimes and rules
    /// kept.
    pub fn scoped(&self, keep: impl Fn(&Host) -> bool, isolation: Isolation) -> Policy {
        self.scoped_to(|h| keep(h).then(|| h.clone()), isolation)
    }

    /// [`Policy::scoped`] where `keep` may also narrow a host (to the nodes of it the pods
    /// land on); `None` drops it.
    pub fn scoped_to(&self, keep: impl Fn(&Host) -> Option<Host>, isolation: Isolation) -> Policy {
        let hosts = self.hosts().iter().filter_map(keep).collect();
        let mut scoped = self.clone().with_hosts(hosts);
        if let Some(w) = &mut scoped.windows {
            w.isolation = isolation;
        }
        scoped
    }

    /// The release components the policy names (`release.components`; none without it).
    pub fn release_components(&self) -> Vec<String> {
        self.release
            .as_ref()
            .map(|r| r.components.clone())
            .unwrap_or_default()
    }

    /// Every host the policy requires: those read from a cluster, else Linux architectures,
    /// then Windows architecture × build.
    pub fn hosts(&self) -> Vec<Host> {
        if let Some(hosts) = &self.node_hosts {
            return hosts.clone();
        }
        let mut hosts = Vec::new();
        if let Some(linux) = &self.linux {
            for a in &linux.architectures {
                hosts.push(Host::of(Platform::new("linux", &a.0)));
            }
        }
        if let Some(windows) = &self.windows {
            for a in &windows.architectures {
                for b in &windows.builds {
                    hosts.push(Host::of(
                        Platform::new("windows", &a.0)
                            .with_os_version(&WindowsVersion::host(b.0).to_string()),
                    ));
                }
            }
        }
        hosts
    }

    /// The runtimes the Linux nodes run (`linux.runtimes`; none without Linux hosts).
    pub fn linux_runtimes(&self) -> Vec<RuntimeProfile> {
        self.linux
            .as_ref()
            .map(|l| l.runtimes.clone())
            .unwrap_or_default()
    }

    /// How the Windows pods are isolated (`process` without a `windows:` section).
    pub fn isolation(&self) -> Isolation {
        self.windows
            .as_ref()
            .map(|w| w.isolation)
            .unwrap_or_default()
    }

    /// The policy with `image` (a reference, or `none`) as its `windows.sandbox_image`
    /// (`--sandbox-image`); a policy without Windows hosts is unchanged.
    pub fn with_sandbox_image(mut self, image: &str) -> Result<Policy, PolicyError> {
        check_sandbox_image(image).map_err(|reason| PolicyError {
            origin: "--sandbox-image".to_string(),
            reason,
            source: None,
        })?;
        if let Some(w) = &mut self.windows {
            w.sandbox_image = Some(image.to_string());
        }
        Ok(self)
    }

    /// The sandbox (pause) image the Windows nodes pull for every pod (`windows.sandbox_image`),
    /// when Windows hosts are judged and the key names one (`none`: no image).
    pub fn sandbox_image(&self) -> Option<crate::reference::ImageRef> {
        let w = self.windows.as_ref()?;
        let has_windows = self.hosts().iter().any(|h| h.platform.is_windows());
        match w.sandbox_image.as_deref() {
            Some(s) if s != "none" && has_windows => s.parse().ok(),
            _ => None,
        }
    }

    /// The Windows builds the policy supports.
    pub fn windows_builds(&self) -> Vec<u16> {
        self.windows
            .as_ref()
            .map(|w| w.builds.iter().map(|b| b.0).collect())
            .unwrap_or_default()
    }

    /// The effective policy as YAML, with build names as comments.
    pub fn to_yaml(&self) -> String {
        let mut out = serde_yaml_ng::to_string(self).unwrap_or_default();
        for b in self.windows_builds() {
            if let Some(name) = build_name(b) {
                out.push_str(&format!("# {b}: {name}\n"));
            }
        }
        out
    }
}

/// The distinct items, sorted.
fn uniq<T: Ord>(items: impl Iterator<Item = T>) -> Vec<T> {
    items.collect::<BTreeSet<T>>().into_iter().collect()
}

crate::error::input_errors!(PolicyError);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::one_line;

    #[test]
    fn embedded_policies_are_valid() {
        for (name, text) in EMBEDDED {
            let p = Policy::parse(text, name).unwrap();
            assert_eq!(p.name, name);
        }
        let p = Policy::default_policy();
        let hosts: Vec<String> = p.hosts().iter().map(Host::label).collect();
        assert_eq!(
            hosts,
            [
                "linux/amd64",
                "windows/amd64:10.0.17763",
                "windows/amd64:10.0.20348"
            ]
        );
        assert_eq!(
            p.runtimes,
            [
                RuntimeProfile::CONTAINERD_1_7,
                RuntimeProfile::CONTAINERD_2_0,
                RuntimeProfile::CONTAINERD_2_2,
                RuntimeProfile::CONTAINERD_2_3
            ]
        );
        // Issue 12: OpenShift's Linux nodes run CRI-O; pods are process-isolated unless the
        // HostProcess policy says otherwise; plain-Kubernetes policies keep containerd.
        assert_eq!(p.linux_runtimes(), [RuntimeProfile::CRI_O]);
        assert_eq!(p.isolation(), Isolation::Process);
        let hp = Policy::load("openshift-hostprocess").unwrap();
        assert_eq!(hp.isolation(), Isolation::Hostprocess);
        assert_eq!(hp.hosts(), p.hosts());
        assert_eq!(hp.linux_runtimes(), [RuntimeProfile::CRI_O]);
        assert_eq!(
            Policy::load("linux-only").unwrap().linux_runtimes(),
            [RuntimeProfile::CONTAINERD_2_3]
        );
        assert!(hp.to_yaml().contains("isolation: hostprocess"));
        assert!(p.to_yaml().contains("# 17763: Windows Server 2019"));
    }

    /// Issue 33, item 10: `--deep` reads Linux entries too unless the policy says
    /// `deep: {linux: false}` (an arm64 entry holding an amd64 build is the commonest
    /// multi-arch mistake); `deep: {linux: true}` and `deep: {}` still parse.
    #[test]
    fn deep_reads_linux_entries_by_default() {
        let rows = [
            ("", true),
            ("deep: {}\n", true),
            ("deep:\n  linux: true\n", true),
            ("deep:\n  linux: false\n", false),
        ];
        for (section, want) in rows {
            let text = format!("name: x\nlinux:\n  architectures: [amd64]\n{section}");
            let p = Policy::parse(&text, "t").unwrap();
            assert_eq!(p.deep_linux(), want, "{section:?}");
        }
        for (name, _) in EMBEDDED {
            assert!(Policy::load(name).unwrap().deep_linux(), "{name}");
        }
    }

    #[test]
    fn rejects_bad_policies_with_location() {
        let cases = [
            (
                "name: x\nlinux:\n  architectures: [amd64]\nwindos: {}\n",
                "line 4",
                "unknown field `windos`",
            ),
            (
                "name: x\nlinux:\n  architectures: [amd64]\n  arch: [x]\n",
                "line 4",
                "unknown field `arch`",
            ),
            (
                "name: x\nwindows:\n  architectures: [amd64]\n  builds: [17]\n",
                "line 4",
                "17 is not a Windows build",
            ),
            (
                "name: x\nwindows:\n  architectures: [amd64]\n  builds: [17763, 17763]\n",
                "line 3",
                "listed twice",
            ),
            (
                "name: x\nwindows:\n  architectures: [amd64]\n  builds: []\n",
                "line 3",
                "must not be empty",
            ),
            (
                "name: x\nwindows:\n  architectures: [x86]\n  builds: [17763]\n",
                "line 3",
                "unknown architecture 'x86'",
            ),
            (
                "name: x\nlinux:\n  architectures: [amd64]\nruntimes: [containerd-9]\n",
                "line 4",
                "unknown runtime profile",
            ),
            (
                "name: x\nwindows:\n  architectures: [amd64]\n  builds: [17763]\n  isolation: hyperv\n",
                "line 5",
                "unknown variant `hyperv`",
            ),
            (
                "name: x\nlinux:\n  architectures: [amd64]\nruntimes: [cri-o]\n",
                "",
                "cri-o runs no Windows nodes",
            ),
            (
                "name: x\nlinux:\n  architectures: [amd64]\n  runtimes: [cri-o, cri-o]\n",
                "line 3",
                "listed twice",
            ),
            ("name: x\n", "", "names no hosts"),
            (
                "name: x\nlinux:\n  architectures: [amd64]\nrelease:\n  components: [cli, '']\n",
                "",
                "'release.components' names an empty component",
            ),
            (
                "name: ''\nlinux:\n  architectures: [amd64]\n",
                "",
                "'name' must not be empty",
            ),
            (
                "linux:\n  architectures: [amd64]\n",
                "",
                "missing field `name`",
            ),
            ("name: [\n", "", "line"),
            ("- a\n- b\n", "", "expected struct Policy"),
        ];
        for (text, line, want) in cases {
            let err = one_line(&Policy::parse(text, "test.yaml").unwrap_err());
            assert!(err.starts_with("policy test.yaml: "), "{err}");
            assert!(err.contains(line) && err.contains(want), "{text:?} → {err}");
        }
    }

    /// Issue 21, item 3: `docker-19.03` follows moby's Windows pull only; Windows nodes may
    /// list it.
    #[test]
    fn docker_is_a_windows_runtime_only() {
        let text = "name: x\nlinux:\n  architectures: [amd64]\n  runtimes: [docker-19.03]\n";
        let err = one_line(&Policy::parse(text, "test.yaml").unwrap_err());
        assert!(
            err.contains(
                "'linux: runtimes' lists docker-19.03, which follows Docker Engine's Windows pull only"
            ),
            "{err}"
        );
        let text = "name: x\nwindows:\n  architectures: [amd64]\n  builds: [17763]\n\
                    runtimes: [docker-19.03]\n";
        let p = Policy::parse(text, "test.yaml").unwrap();
        assert_eq!(p.runtimes, [RuntimeProfile::DOCKER_19_03]);
    }

    #[test]
    fn load_by_name_or_file() {
        assert_eq!(Policy::load("linux-only").unwrap().hosts().len(), 1);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.yaml");
        std::fs::write(
            &path,
            "name: mine\nwindows:\n  architectures: [amd64]\n  builds: [26100]\n",
        )
        .unwrap();
        let p = Policy::load(path.to_str().unwrap()).unwrap();
        assert_eq!(p.windows_builds(), [26100]);
        assert_eq!(p.runtimes, [RuntimeProfile::CONTAINERD_2_3]);
        let err = Policy::load("no-such-policy").unwrap_err().to_string();
        assert!(
            err.contains("no-such-policy") && err.contains("openshift"),
            "{err}"
        );
    }

    /// Issue 13 (`--from-manifests`): a scope narrows the policy's own hosts (or a cluster's)
    /// and sets the isolation; runtimes and release components stay.
    #[test]
    fn scoped_narrows_hosts_and_keeps_runtimes() {
        let p = Policy::default_policy();
        let windows_only = p.scoped(|h| h.platform.is_windows(), Isolation::Hostprocess);
        let labels: Vec<String> = windows_only.hosts().iter().map(Host::label).collect();
        assert_eq!(
            labels,
            ["windows/amd64:10.0.17763", "windows/amd64:10.0.20348"]
        );
        assert!(windows_only.linux.is_none());
        assert_eq!(windows_only.isolation(), Isolation::Hostprocess);
        assert_eq!(windows_only.runtimes, p.runtimes);
        assert_eq!(windows_only.release_components().len(), 4);
        let one_build = p.scoped(
            |h| {
                h.platform
                    .windows_version()
                    .is_some_and(|v| v.build == 20348)
            },
            Isolation::Process,
        );
        assert_eq!(one_build.windows_builds(), [20348]);
        let linux = p.scoped(|h| !h.platform.is_windows(), Isolation::Process);
        assert!(linux.windows.is_none());
        assert_eq!(linux.linux_runtimes(), [RuntimeProfile::CRI_O]);
        let nothing = p.scoped(|_| false, Isolation::Process);
        assert!(nothing.hosts().is_empty());
        assert!(
            Policy::load("linux-only")
                .unwrap()
                .release_components()
                .is_empty()
        );
    }

    /// Issue 13: hosts read from a cluster replace the policy's; the sections follow them and
    /// the isolation mode stays.
    #[test]
    fn with_hosts_replaces_the_host_list_and_keeps_isolation() {
        let node = |p: Platform, rt, names: &[&str]| Host {
            platform: p,
            runtime: Some(rt),
            nodes: names.iter().map(ToString::to_string).collect(),
        };
        let w = |b: u16| {
            Platform::new("windows", "amd64").with_os_version(&WindowsVersion::host(b).to_string())
        };
        let hosts = vec![
            node(
                Platform::new("linux", "arm64"),
                RuntimeProfile::CRI_O,
                &["a"],
            ),
            node(w(26100), RuntimeProfile::CONTAINERD_1_7, &["w1", "w2"]),
            node(w(20348), RuntimeProfile::CONTAINERD_2_2, &["w3"]),
        ];
        let hp = Policy::load("openshift-hostprocess")
            .unwrap()
            .with_hosts(hosts.clone());
        assert_eq!(hp.hosts(), hosts);
        assert_eq!(hp.isolation(), Isolation::Hostprocess);
        assert_eq!(hp.windows_builds(), [20348, 26100]);
        assert_eq!(
            hp.runtimes,
            [
                RuntimeProfile::CONTAINERD_1_7,
                RuntimeProfile::CONTAINERD_2_2
            ]
        );
        assert_eq!(hp.linux_runtimes(), [RuntimeProfile::CRI_O]);
        assert_eq!(
            hp.linux.as_ref().unwrap().architectures[0].to_string(),
            "arm64"
        );
        // A Linux-only policy judges the cluster's Windows nodes too (process isolation);
        // a cluster without Linux nodes drops the policy's Linux hosts.
        let lo = Policy::load("linux-only")
            .unwrap()
            .with_hosts(hosts[1..].to_vec());
        assert!(lo.linux.is_none());
        assert_eq!(lo.isolation(), Isolation::Process);
        assert_eq!(lo.hosts().len(), 2);
        assert_eq!(
            hosts[1].subject(),
            "2 nodes (w1, w2) on windows/amd64:10.0.26100"
        );
        let many = Host {
            nodes: (1..=7).map(|i| format!("n{i}")).collect(),
            ..hosts[0].clone()
        };
        assert_eq!(
            many.subject(),
            "7 nodes (n1, n2, n3, n4, n5 and 2 more) on linux/arm64"
        );
        assert_eq!(Host::of(w(17763)).subject(), "windows/amd64:10.0.17763");
    }
}
