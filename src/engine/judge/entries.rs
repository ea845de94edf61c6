//! Entry findings: what each entry of the top list claims — attestations, a missing
//! `os.version` (not for HostProcess pods), an `os.version` the image config lacks, a platform
//! that disagrees with the image config or is malformed, two entries claiming one platform
//! (a gzip/zstd pair is one claim), and Windows builds no supported host selects.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

use super::text::build_text;
use crate::engine::finding::Finding;
use crate::engine::resolve::config_platform;
use crate::engine::rules::Rule;
use crate::graph::{Content, Node};
use crate::manifest::{ANNOTATION_REFERENCE_TYPE, Descriptor};
use crate::platform::{ANNOTATION_ZSTD, Platform, WindowsVersion};
use crate::policy::{Isolation, Policy};

/// Findings for every entry of the top list (none for a single image).
pub(super) fn findings(root: &Node, policy: &Policy, selected: &BTreeSet<String>) -> Vec<Finding> {
    let Content::Index { index, children } = &root.content else {
        return vec![];
    };
    let builds = policy.windows_builds();
    let mut claims = Claims::default();
    let mut findings = Vec::new();
    for (d, child) in index.manifests.iter().zip(children) {
        if d.is_attestation() {
            findings.push(attestation(d));
            // An annotated entry with a real platform is a candidate like any other
            // (runtimes select by platform): it gets the other entry checks too.
            if d.never_selected() {
                continue;
            }
        }
        let Some(p) = &d.platform else { continue };
        // An entry without os.version matches every Windows host: a fault only where Windows
        // hosts are judged, and process-isolated ones.
        let windows_process = policy.windows.is_some() && policy.isolation() == Isolation::Process;
        findings.extend(entry_checks(d, child.as_ref(), windows_process));
        let version = p.windows_version();
        findings.extend(claims.duplicate(d, version));
        findings.extend(unsupported_build(d, p, version, &builds, selected));
    }
    findings
}

/// What entry `d` (its child `child`) claims that its image or the hosts contradict, on its
/// own: an `os.version` missing (when `windows_process`: the policy judges process-isolated
/// Windows hosts), one its config lacks, a malformed one, or a platform that disagrees with the
/// config. `verify` reports these; `inspect` shows their rules as the entry's status, so the
/// two agree (issue 21, item 5).
pub(crate) fn entry_checks(
    d: &Descriptor,
    child: Option<&Node>,
    windows_process: bool,
) -> Vec<Finding> {
    let Some(p) = &d.platform else {
        return vec![];
    };
    let cfg = config_platform(child);
    let mut findings = Vec::new();
    if windows_process {
        findings.extend(os_version_missing(d, p, cfg.as_ref()));
    }
    findings.extend(cfg.as_ref().and_then(|cfg| not_in_config(d, p, cfg)));
    // A malformed os.version is one platform-mismatch, not two.
    match malformed_version(d, p) {
        Some(f) => findings.push(f),
        None => findings.extend(cfg.and_then(|cfg| platform_mismatch(d, p, &cfg))),
    }
    findings
}

/// A finding about entry `d`.
fn entry_finding(rule: Rule, message: String, d: &Descriptor) -> Finding {
    Finding::new(rule, message, d.digest().ok().as_ref())
}

/// The hint of an `attestation` finding about an entry a runtime may select.
const SELECTABLE_ATTESTATION_HINT: &str = "give the attestation the platform unknown/unknown, as \
     buildx does: containerd and CRI-O select entries by platform and ignore the \
     vnd.docker.reference.type annotation";

/// An attestation entry: one with an `unknown/unknown` platform, which no host pulls, or one
/// only annotated as such, which a host selects by its platform like any other (containerd
/// `images.Manifest`, containers/image `chooseInstance`).
fn attestation(d: &Descriptor) -> Finding {
    let kind = d
        .annotations
        .get(ANNOTATION_REFERENCE_TYPE)
        .map_or("unknown/unknown", String::as_str);
    if d.never_selected() {
        let message = format!(
            "{} is an attestation entry ({kind}); it is never pulled",
            d.digest
        );
        return entry_finding(Rule::Attestation, message, d);
    }
    let pulled = match &d.platform {
        Some(p) => format!("its platform is {p}: a node of that platform may pull it"),
        None => "it has no platform: containerd tries it when no entry matches and it is the \
                 first without a platform, CRI-O takes it when nothing else matches"
            .to_string(),
    };
    let message = format!(
        "{} is annotated as an attestation ({kind}), but {pulled}",
        d.digest
    );
    entry_finding(Rule::Attestation, message, d).with_hint(SELECTABLE_ATTESTATION_HINT)
}

/// A Windows entry without `os.version`, which matches every Windows host.
fn os_version_missing(d: &Descriptor, p: &Platform, cfg: Option<&Platform>) -> Option<Finding> {
    if !p.is_windows() || !p.os_version.as_deref().unwrap_or("").is_empty() {
        return None;
    }
    let says = match cfg.map(|c| c.os_version.as_deref().unwrap_or("")) {
        Some("") => {
            " and neither has its config (a HostProcess image? see windows.isolation)".to_string()
        }
        Some(v) => format!(" (its config says {v})"),
        None => String::new(),
    };
    let message = format!(
        "windows entry {} has no os.version{says}: it matches every Windows host",
        d.digest
    );
    Some(entry_finding(Rule::OsVersionMissing, message, d))
}

/// A Windows entry whose `os.version` is not `MAJOR.MINOR.BUILD[.REVISION]` in digits only
/// (e.g. `10.0.17763.5329,`): containerd reads the build from the first three fields and
/// ignores the rest, other tools compare the string — reported as `platform-mismatch`.
fn malformed_version(d: &Descriptor, p: &Platform) -> Option<Finding> {
    let v = p.os_version.as_deref().filter(|v| !v.is_empty())?;
    if !p.is_windows() || WindowsVersion::is_well_formed(v) {
        return None;
    }
    let message = format!(
        "entry {}: os.version '{v}' is not MAJOR.MINOR.BUILD[.REVISION] (digits only); \
         containerd reads {}, other tools compare the whole string",
        d.digest,
        WindowsVersion::parse(v)
            .map_or("0.0.0 (it matches no host)".to_string(), |w| w.to_string())
    );
    Some(entry_finding(Rule::PlatformMismatch, message, d))
}

/// A Windows entry that states an `os.version` its image config does not have: the list
/// claims a build the image does not.
fn not_in_config(d: &Descriptor, p: &Platform, cfg: &Platform) -> Option<Finding> {
    let v = p.os_version.as_deref().filter(|v| !v.is_empty())?;
    if !p.is_windows() || !cfg.os_version.as_deref().unwrap_or("").is_empty() {
        return None;
    }
    let message = format!(
        "windows entry {} says os.version {v} but its image config has none",
        d.digest
    );
    Some(entry_finding(Rule::OsVersionNotInConfig, message, d))
}

/// An entry whose platform disagrees with its image config.
fn platform_mismatch(d: &Descriptor, p: &Platform, cfg: &Platform) -> Option<Finding> {
    let why = platform_disagreement(p, cfg)?;
    let message = format!("entry {}: {why}", d.digest);
    Some(entry_finding(Rule::PlatformMismatch, message, d))
}

/// What an entry claims: normalised os/arch/variant, build, os.features (sorted) and
/// compression, borrowed from its platform and compared as they are (they were written out
/// as one string per entry).
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Claim<'a> {
    os: Cow<'a, str>,
    arch: Cow<'a, str>,
    variant: Cow<'a, str>,
    build: Option<u16>,
    features: Vec<&'a str>,
    zstd: bool,
}

/// The platforms claimed so far → the first entry claiming each.
#[derive(Debug, Default)]
struct Claims<'a>(BTreeMap<Claim<'a>, &'a Descriptor>);

impl<'a> Claims<'a> {
    /// Records `d`'s claim (its platform, whose Windows version is `version`); a finding
    /// when an earlier entry made the same one. Windows entries without a version are left
    /// out: reported as `os-version-missing`, they claim every build. The zstd instance of a
    /// gzip/zstd pair ([`ANNOTATION_ZSTD`]) is an alternate of its twin, not a second claim.
    fn duplicate(&mut self, d: &'a Descriptor, version: Option<WindowsVersion>) -> Option<Finding> {
        let p = d.platform.as_ref()?;
        if p.is_windows() && version.is_none() {
            return None;
        }
        let (os, arch, variant) = p.normal();
        let mut features: Vec<&str> = p.os_features.iter().map(String::as_str).collect();
        features.sort_unstable();
        let claim = Claim {
            os,
            arch,
            variant,
            build: version.map(|v| v.build),
            features,
            zstd: d.annotations.get(ANNOTATION_ZSTD).map(String::as_str) == Some("true"),
        };
        let Some(first) = self.0.get(&claim) else {
            self.0.insert(claim, d);
            return None;
        };
        let shown = |p: Option<&Platform>| match p {
            Some(p) if p.is_windows() => p.os_version.as_ref().map(|v| format!(" ({v})")),
            _ => None,
        };
        let what = match version {
            Some(v) if p.is_windows() => format!("{} build {}", p.os_arch(), v.build),
            _ => p.os_arch(),
        };
        let message = format!(
            "entries {}{} and {}{} both claim {what}",
            first.digest,
            shown(first.platform.as_ref()).unwrap_or_default(),
            d.digest,
            shown(Some(p)).unwrap_or_default(),
        );
        Some(entry_finding(Rule::DuplicatePlatform, message, d))
    }
}

/// A Windows entry for a build outside the policy that no supported host selects.
fn unsupported_build(
    d: &Descriptor,
    p: &Platform,
    version: Option<WindowsVersion>,
    builds: &[u16],
    selected: &BTreeSet<String>,
) -> Option<Finding> {
    let build = version?.build;
    if !p.is_windows() || builds.contains(&build) || selected.contains(&d.digest) {
        return None;
    }
    let message = format!(
        "windows entry {} ({}) is selected by no supported host",
        d.digest,
        build_text(p)
    );
    Some(entry_finding(Rule::UnsupportedBuild, message, d))
}

/// Why a descriptor platform and a config platform disagree, if they do.
fn platform_disagreement(entry: &Platform, config: &Platform) -> Option<String> {
    if entry.normal() != config.normal() {
        return Some(format!(
            "the list says {} but the image config says {}",
            entry.os_arch(),
            config.os_arch()
        ));
    }
    // A config without os.version (an image built FROM scratch) cannot contradict the list:
    // the build was set on purpose, e.g. `imgcheck assemble CHILD=os.version=…`.
    if entry.is_windows() && entry.os_version.is_some() && config.os_version.is_some() {
        let e = entry.windows_version();
        let c = config.windows_version();
        let same_build = match (e, c) {
            (Some(e), Some(c)) => (e.major, e.minor, e.build) == (c.major, c.minor, c.build),
            _ => false,
        };
        if !same_build {
            return Some(format!(
                "the list says os.version {} but the image config says {}",
                build_text(entry),
                build_text(config)
            ));
        }
    }
    let set = |v: &Vec<String>| v.iter().cloned().collect::<BTreeSet<_>>();
    let mut config_features = set(&config.os_features);
    // containerd sets `win32k` aside: one only the config lists is no disagreement.
    if !entry.os_features.iter().any(|f| f == "win32k") {
        config_features.remove("win32k");
    }
    if set(&entry.os_features) != config_features {
        return Some(format!(
            "the list says os.features [{}] but the image config says [{}]",
            entry.os_features.join(","),
            config.os_features.join(",")
        ));
    }
    None
}

#[cfg(test)]
mod tests;
