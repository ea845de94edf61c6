//! The upgrade gate (`verify --upgrade`): which runtime each node of `--nodes` runs once the
//! cluster is upgraded. OpenShift's Windows nodes run the containerd the Windows Machine Config
//! Operator (WMCO) installs, and an upgrade of OpenShift brings the WMCO of its minor, which
//! reconfigures each Windows node, one at a time, with its own containerd; the Windows build
//! stays (WMCO does not reinstall the OS) and the Linux nodes keep CRI-O.
//!
//! [`resolve_target`] turns the version upgraded to — an OpenShift version (`4.19`, a release
//! payload's `4.19.3`), a WMCO version (`10.19.1`), or the runtime itself (`containerd://2.1.4`,
//! a profile name) — into the profile the Windows nodes will run, through [`WMCO_CONTAINERD`],
//! the containerd each WMCO release builds (its `Makefile`'s `CONTAINERD_GIT_VERSION`, its
//! `containerd` submodule). [`upgraded_hosts`] adds, to the host rows of today, a row per
//! Windows platform under that profile: the target images are judged on the nodes as they are
//! while WMCO works through them, and as WMCO leaves them. `docs/cluster.md`, "The upgrade
//! gate", gives the sources.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::cluster::nodes::runtime_profile;
use crate::platform::{RuntimeChoice, RuntimeProfile};
use crate::policy::Host;

/// What WMCO release an OpenShift minor brings, and the containerd it installs on Windows
/// nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WmcoRelease {
    /// The OpenShift minor (`4.Y`): `Y`.
    pub ocp_minor: u32,
    /// The WMCO series of that minor (`10.19`; `6.0` for 4.11).
    pub wmco: &'static str,
    /// The containerd release WMCO builds, as its sources record it: major, minor and the
    /// patch when one release is recorded (`None`: some patch release of the series).
    pub containerd: (u32, u32, Option<u32>),
    /// Where that is recorded, in WMCO's repository.
    pub source: &'static str,
}

/// WMCO 10.Y is OpenShift 4.Y from 4.15 on (WMCO `hack/merge-order.sh`: "The minor WMCO
/// version (y) maps to a release branch number (release-4.y)").
const FIRST_10_Y: u32 = 15;

/// Why the WMCO 10.Y rows are containerd 1.7: WMCO's master moved to containerd 1.7 in PR #1755
/// (2023-08-29, `[build] Update containerd version to v1.7.5`), then PR #2158 (2024-05-06,
/// v1.7.16) and PR #2428 (2024-09-17, v1.7.20) kept it there, and in 2026 its submodule
/// still follows openshift/containerd's 1.7 fork (`.claude/skills/containerd-fast-forward.md`:
/// stable `v1.7.x` tags only; openshift/containerd#10 moved it from v1.7.27 to v1.7.33):
/// every release branch cut from master in between builds a 1.7 patch release.
const MASTER_ON_1_7: &str = "master builds containerd 1.7 from PR #1755 (2023-08-29, v1.7.5) \
    through PR #2158 (v1.7.16) and PR #2428 (v1.7.20) to .claude/skills/containerd-fast-forward.md \
    (2026: the submodule follows openshift/containerd's v1.7.x fork)";

/// The containerd each WMCO release builds, OpenShift minor ascending: the `Makefile`'s
/// `CONTAINERD_GIT_VERSION` (written by `hack/update_submodules.sh`
/// `generate_version_commit` from the `containerd` submodule), per release branch. WMCO 6.0
/// (OpenShift 4.11) is the first that installs containerd (before it, Docker Engine); no
/// source was read for WMCO 9 (4.14). A patch of `None` is any patch release of the series.
pub const WMCO_CONTAINERD: &[WmcoRelease] = &[
    WmcoRelease {
        ocp_minor: 11,
        wmco: "6.0",
        containerd: (1, 6, Some(24)),
        source: "Makefile CONTAINERD_GIT_VERSION=v1.6.24-7-g38d6e91c9 at WMCO_VERSION 6.0.3 \
                 (commit 00571ee33f82)",
    },
    WmcoRelease {
        ocp_minor: 12,
        wmco: "7.0",
        containerd: (1, 6, Some(24)),
        source: "PR #1839 `[release-4.12] submodule update 09 27`: `[build] Update containerd \
                 version to v1.6.24-7-gb93c35c9c`",
    },
    WmcoRelease {
        ocp_minor: 13,
        wmco: "8.0",
        containerd: (1, 6, Some(19)),
        source: "Makefile CONTAINERD_GIT_VERSION=v1.6.19-4-gd594a39e7 at WMCO_VERSION 8.0.1",
    },
    WmcoRelease {
        ocp_minor: 15,
        wmco: "10.15",
        containerd: (1, 7, None),
        source: "release-4.15 built v1.7.5 (master PR #1755; containerd-1.7.0) until PR #2160 \
                 (2024-05-07, `[release-4.15] submodule update 05 07`) moved it to v1.7.16",
    },
    WmcoRelease {
        ocp_minor: 16,
        wmco: "10.16",
        containerd: (1, 7, None),
        source: MASTER_ON_1_7,
    },
    WmcoRelease {
        ocp_minor: 17,
        wmco: "10.17",
        containerd: (1, 7, None),
        source: MASTER_ON_1_7,
    },
    WmcoRelease {
        ocp_minor: 18,
        wmco: "10.18",
        containerd: (1, 7, None),
        source: MASTER_ON_1_7,
    },
    WmcoRelease {
        ocp_minor: 19,
        wmco: "10.19",
        containerd: (1, 7, None),
        source: MASTER_ON_1_7,
    },
    WmcoRelease {
        ocp_minor: 20,
        wmco: "10.20",
        containerd: (1, 7, None),
        source: MASTER_ON_1_7,
    },
    WmcoRelease {
        ocp_minor: 21,
        wmco: "10.21",
        containerd: (1, 7, None),
        source: MASTER_ON_1_7,
    },
];

/// Where the version upgraded to comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UpgradeTo {
    /// The release payload's version (`--from-release`: its `image-references`'
    /// `metadata.name`).
    Release,
    /// Typed (`--upgrade-to`): an OpenShift or WMCO version, `containerd://X.Y.Z` or a
    /// runtime profile name.
    Version(String),
}

/// The runtime the Windows nodes run after the upgrade, and how it was found (JSON
/// `upgrade.target`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UpgradeTarget {
    /// The version as given (`4.19.0`, `10.19.1`, `containerd://2.1.4`, `containerd-2.2`).
    pub version: String,
    /// Where it was given: `--upgrade-to`, or the release payload.
    pub from: String,
    /// The OpenShift minor it is (`4.19`), when it names one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub openshift: Option<String>,
    /// The WMCO series that minor brings (`10.19`), when it names one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wmco: Option<String>,
    /// The containerd the Windows nodes will run (`1.7.27`), when known (not for a profile
    /// named).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub containerd: Option<String>,
    /// The profile the Windows nodes are judged under after the upgrade.
    pub profile: RuntimeProfile,
    /// How the profile was found: the WMCO source, or the runtime's own mapping.
    pub reason: String,
}

impl UpgradeTarget {
    /// `OpenShift 4.19 (WMCO 10.19): containerd 1.7.27 → containerd-1.7` (input-derived parts
    /// unescaped).
    pub fn line(&self) -> String {
        let mut what = match (&self.openshift, &self.wmco) {
            (Some(ocp), Some(wmco)) => format!("OpenShift {ocp} (WMCO {wmco})"),
            _ => self.version.clone(),
        };
        if let Some(c) = &self.containerd {
            what.push_str(&format!(": containerd {c}"));
        }
        match what == self.profile.name() {
            true => format!("{what} ({})", self.from),
            false => format!("{what} → {} ({}; {})", self.profile, self.from, self.reason),
        }
    }
}

/// The Windows nodes of one host row before and after the upgrade (JSON `upgrade.nodes[]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProfileChange {
    /// The row's platform (`windows/amd64:10.0.20348`): the build stays.
    pub platform: String,
    /// Its nodes, sorted.
    pub nodes: Vec<String>,
    /// The profile they run today.
    pub before: RuntimeProfile,
    /// The runtimes they report today (`containerd://1.7.27`).
    pub reported: Vec<String>,
    /// The profile they run after the upgrade.
    pub after: RuntimeProfile,
}

impl ProfileChange {
    /// `3 Windows nodes (a, b, c) on windows/amd64:10.0.17763: containerd://1.7.27
    /// (containerd-1.7) → containerd-2.3` (input-derived parts unescaped).
    pub fn line(&self) -> String {
        let n = self.nodes.len();
        let noun = if n == 1 { "node" } else { "nodes" };
        let change = match self.before == self.after {
            true => format!("{}, unchanged", self.before),
            false => format!("{} → {}", self.before, self.after),
        };
        format!(
            "{n} Windows {noun} ({}) on {}: {} ({change})",
            self.nodes.join(", "),
            self.platform,
            self.reported.join(", "),
        )
    }
}

/// An image whose host row differs before and after the upgrade (JSON `upgrade.images[]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VerdictChange {
    /// The image, as its report names it.
    pub image: String,
    /// The nodes' platform.
    pub platform: String,
    /// The nodes.
    pub nodes: Vec<String>,
    /// The profile today and what the nodes get under it (`ok`, or a rule's id).
    pub before: RuntimeProfile,
    /// `ok`, or the rule's id.
    pub before_status: String,
    /// The profile after the upgrade.
    pub after: RuntimeProfile,
    /// `ok`, or the rule's id.
    pub after_status: String,
}

impl VerdictChange {
    /// `img: 1 node (w) on windows/amd64:10.0.20348: ok under containerd-1.7 today, no-match
    /// under containerd-2.3 after the upgrade` (input-derived parts unescaped).
    pub fn line(&self) -> String {
        let n = self.nodes.len();
        let noun = if n == 1 { "node" } else { "nodes" };
        format!(
            "{}: {n} {noun} ({}) on {}: {} under {} today, {} under {} after the upgrade",
            self.image,
            self.nodes.join(", "),
            self.platform,
            self.before_status,
            self.before,
            self.after_status,
            self.after,
        )
    }
}

/// What the upgrade gate found (JSON `upgrade`): the target, the Windows rows before and after,
/// and the images whose verdict on some row changes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UpgradeReport {
    /// The runtime after the upgrade and how it was found.
    pub target: UpgradeTarget,
    /// Each Windows host row of `--nodes`, before and after.
    pub nodes: Vec<ProfileChange>,
    /// The images whose row differs before and after (one entry per image and row).
    pub images: Vec<VerdictChange>,
}

/// The profile the Windows nodes run after an upgrade to `version` (given `from`: the flag,
/// or the release payload), or why it cannot be known (naming the version).
pub fn resolve_target(version: &str, from: &str) -> Result<UpgradeTarget, String> {
    let v = version.trim();
    let target = |containerd: Option<String>, profile, reason: String| UpgradeTarget {
        version: v.to_string(),
        from: from.to_string(),
        openshift: None,
        wmco: None,
        containerd,
        profile,
        reason,
    };
    if let Ok(profile) = v.parse::<RuntimeProfile>() {
        if !profile.runs_windows() {
            return Err(format!("'{v}' runs no Windows node"));
        }
        return Ok(target(None, profile, "the profile named".into()));
    }
    if let Some(rest) = v.strip_prefix("containerd://") {
        let choice = runtime_profile(v).map_err(|why| format!("'{v}' {why}"))?;
        return Ok(target(
            Some(rest.to_string()),
            choice.profile,
            choice.reason,
        ));
    }
    let row = wmco_release(v)?;
    let (major, minor, patch) = row.containerd;
    let containerd = match patch {
        Some(p) => format!("{major}.{minor}.{p}"),
        None => format!("{major}.{minor}.x"),
    };
    // Some patch of the series: the newest z-stream, which an upgrade brings.
    let choice = RuntimeChoice::containerd((major, minor, patch.unwrap_or(u32::MAX)));
    Ok(UpgradeTarget {
        openshift: Some(format!("4.{}", row.ocp_minor)),
        wmco: Some(row.wmco.to_string()),
        ..target(
            Some(containerd),
            choice.profile,
            format!("WMCO {}: {}", row.wmco, row.source),
        )
    })
}

/// The row of [`WMCO_CONTAINERD`] an OpenShift version (`4.Y[.Z][-…]`) or WMCO version
/// (`6.0` – `9.Y`, `10.Y[.Z]`) names.
fn wmco_release(v: &str) -> Result<&'static WmcoRelease, String> {
    let named = "is neither an OpenShift version (4.Y[.Z]), a WMCO version (10.Y[.Z]), \
                 containerd://X.Y.Z nor a runtime profile";
    let core = v
        .trim_start_matches('v')
        .split(['-', '+'])
        .next()
        .unwrap_or("");
    let fields: Vec<u32> = (core.split('.').map(str::parse))
        .collect::<Result<_, _>>()
        .map_err(|_| format!("'{v}' {named}"))?;
    let ocp_minor = match fields[..] {
        [4, minor] | [4, minor, _] => minor,
        [10, minor] | [10, minor, _] if minor >= FIRST_10_Y => minor,
        [10, minor] | [10, minor, _] => {
            return Err(format!(
                "'{v}': WMCO 10.{minor} does not exist (WMCO 10.Y starts at 10.{FIRST_10_Y}, \
                 OpenShift 4.{FIRST_10_Y})"
            ));
        }
        // WMCO 6.0 is OpenShift 4.11, 9.0 is 4.14 (WMCO docs/wmco-prerequisites.md).
        [major @ 5..=9, ..] if fields.len() <= 3 => major + 5,
        _ => return Err(format!("'{v}' {named}")),
    };
    let first = WMCO_CONTAINERD[0];
    let last = WMCO_CONTAINERD[WMCO_CONTAINERD.len() - 1];
    let name = |what: &str| {
        format!(
            "'{v}': {what}: name the runtime the Windows nodes will run instead \
             (--upgrade-to containerd://X.Y.Z, or a profile such as containerd-2.2)"
        )
    };
    if ocp_minor < first.ocp_minor {
        return Err(name(&format!(
            "OpenShift 4.{ocp_minor}'s WMCO ran Docker Engine, not containerd (WMCO {} on \
             OpenShift 4.{} is the first to install containerd)",
            first.wmco, first.ocp_minor
        )));
    }
    WMCO_CONTAINERD
        .iter()
        .find(|r| r.ocp_minor == ocp_minor)
        .ok_or_else(|| match ocp_minor > last.ocp_minor {
            true => name(&format!(
                "the containerd of OpenShift 4.{ocp_minor}'s WMCO is not in imgcheck's table \
                 (newest: OpenShift 4.{}, WMCO {})",
                last.ocp_minor, last.wmco
            )),
            false => name(&format!(
                "no WMCO source was read for the containerd of OpenShift 4.{ocp_minor}"
            )),
        })
}

/// The host rows to judge for an upgrade to `to`: every row of today, and each Windows row
/// under `to` (its nodes and build unchanged); rows of one platform and profile are one row,
/// their nodes together, in the node list's order (Linux first, then Windows, by platform,
/// then profile).
pub fn upgraded_hosts(hosts: &[Host], to: RuntimeProfile) -> Vec<Host> {
    let after = (hosts.iter().filter(|h| h.platform.is_windows())).map(|h| Host {
        runtime: Some(to),
        ..h.clone()
    });
    let mut rows: BTreeMap<(bool, String, Option<RuntimeProfile>), Host> = BTreeMap::new();
    for h in hosts.iter().cloned().chain(after) {
        let key = (h.platform.is_windows(), h.platform.to_string(), h.runtime);
        match rows.get_mut(&key) {
            Some(row) => row.nodes.extend(h.nodes),
            None => {
                rows.insert(key, h);
            }
        }
    }
    rows.into_values()
        .map(|mut h| {
            h.nodes.sort();
            h.nodes.dedup();
            h
        })
        .collect()
}

/// Each Windows row of today's `hosts` before and after an upgrade to `to`, with the runtimes
/// its nodes report (`reported`: a node's name → its `containerRuntimeVersion`).
pub fn profile_changes(
    hosts: &[Host],
    to: RuntimeProfile,
    reported: &BTreeMap<&str, &str>,
) -> Vec<ProfileChange> {
    (hosts.iter())
        .filter(|h| h.platform.is_windows())
        .filter_map(|h| {
            let mut versions: Vec<String> = (h.nodes.iter())
                .filter_map(|n| reported.get(n.as_str()).map(|v| v.to_string()))
                .collect();
            versions.sort();
            versions.dedup();
            Some(ProfileChange {
                platform: h.label(),
                nodes: h.nodes.clone(),
                before: h.runtime?,
                reported: versions,
                after: to,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests;
