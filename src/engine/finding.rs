//! What judging produces: [`Finding`]s with their [`Severity`], the host matrix rows
//! ([`HostResult`]), and the [`ImageReport`] with its [`Verdict`].

use std::fmt;

use serde::Serialize;

use super::binaries::BinaryEntry;
use super::halves::DriverStage;
use super::rules::Rule;
use super::severity::Severity;
use super::sources::EntrySource;
use super::standing::{AdmissionEntry, SignatureEntry};
use crate::digest::Digest;
use crate::platform::RuntimeProfile;
use crate::policy::Isolation;

/// One finding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// The rule (serialised as its id).
    pub rule: Rule,
    /// Severity: the rule's, unless a check raises it (mirror-check does for a blocked source).
    pub severity: Severity,
    /// What is wrong, naming the entry or host.
    pub message: String,
    /// How to fix it.
    pub hint: &'static str,
    /// The object concerned, if one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
    /// The host concerned, if one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// `mirror-check`: the OS of the nodes whose pull it concerns (`linux`, `windows`), when
    /// it concerns one OS's pull only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nodes: Option<&'static str>,
}

impl Finding {
    /// The same finding with another hint (a rule's wording for another kind of host).
    pub fn with_hint(self, hint: &'static str) -> Finding {
        Finding { hint, ..self }
    }

    /// A finding of `rule` with the rule's severity and hint.
    pub fn new(rule: Rule, message: String, digest: Option<&Digest>) -> Finding {
        Finding {
            rule,
            severity: rule.severity(),
            message,
            hint: rule.hint(),
            digest: digest.map(ToString::to_string),
            host: None,
            nodes: None,
        }
    }

    /// The same finding, about the pull of the nodes of `os` (`linux`, `windows`).
    pub fn for_nodes(self, os: &'static str) -> Finding {
        Finding {
            nodes: Some(os),
            ..self
        }
    }

    /// The same finding, about the host labelled `host`.
    pub(super) fn on_host(self, host: String) -> Finding {
        Finding {
            host: Some(host),
            ..self
        }
    }
}

/// An image's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Every check ran and no error-severity finding.
    Pass,
    /// A check could not run (and nothing failed).
    Error,
    /// The image fails the policy.
    Fail,
}

/// The verdict for a set of findings: `fail` on any error other than `fetch-error`, else
/// `error` when something could not be fetched, else `pass`.
pub fn verdict_of(findings: &[Finding]) -> Verdict {
    if findings
        .iter()
        .any(|f| f.severity == Severity::Error && f.rule != Rule::FetchError)
    {
        Verdict::Fail
    } else if findings.iter().any(|f| f.rule == Rule::FetchError) {
        Verdict::Error
    } else {
        Verdict::Pass
    }
}

/// What one host selects under one runtime profile.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HostResult {
    /// The host, e.g. `windows/amd64:10.0.17763`.
    pub platform: String,
    /// The runtime profile the host was resolved under (Linux hosts: a profile of
    /// `linux.runtimes`; `null` only in reports made without a host matrix).
    pub runtime: Option<RuntimeProfile>,
    /// How the Windows pods are isolated (`process`, `hostprocess`); `null` for Linux hosts.
    pub isolation: Option<Isolation>,
    /// The digest the host pulls, `null` for no match.
    pub selected: Option<String>,
    /// os.version of the selected image's config.
    pub os_version: Option<String>,
    /// `ok`, or the rule of the problem (serialised as its id).
    pub status: HostStatus,
    /// The nodes the host stands for, by name (hosts read from a cluster with `--nodes`;
    /// absent from JSON for a policy's hosts).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub nodes: Vec<String>,
}

/// What one host gets under one runtime profile: an image it can run, or the rule that says
/// what goes wrong. Serialised and displayed as `ok` or the rule's id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostStatus {
    /// The host pulls an image it can run.
    Ok,
    /// The host gets no image (`no-match`), one it cannot run (`wrong-build-selected`), or one
    /// that cannot be pulled (`child-missing`, `digest-mismatch`, `fetch-error`,
    /// `bad-manifest`).
    Fails(Rule),
}

impl HostStatus {
    /// `ok`, or the rule's id.
    pub fn id(self) -> &'static str {
        match self {
            HostStatus::Ok => "ok",
            HostStatus::Fails(rule) => rule.id(),
        }
    }
}

impl From<Option<Rule>> for HostStatus {
    /// No rule broken is `ok`.
    fn from(rule: Option<Rule>) -> HostStatus {
        rule.map_or(HostStatus::Ok, HostStatus::Fails)
    }
}

impl fmt::Display for HostStatus {
    /// The id, padded like a `str` when a width is given.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.id())
    }
}

/// A host status serialises as its id (`"status": "ok"`, `"status": "no-match"`).
impl Serialize for HostStatus {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.id())
    }
}

/// Where a run found an image it judged, other than the command line and reference lists.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Origin {
    /// A component of an OpenShift release payload (`--from-release`).
    Release {
        /// The release reference as given.
        release: String,
        /// The digest of the release image whose `image-references` was read.
        release_digest: String,
        /// The payload's version (the `metadata.name` of its `image-references`).
        #[serde(skip_serializing_if = "Option::is_none")]
        version: Option<String>,
        /// The component: a `spec.tags[].name` of `image-references`.
        tag: String,
    },
    /// A container of a pod template (`--from-manifests`).
    Manifest {
        /// The file the template is in.
        path: String,
        /// The object, `KIND NAMESPACE/NAME` (or `KIND NAME` without a namespace).
        object: String,
        /// The container's name (init containers too).
        container: String,
        /// The container is an init container (absent from JSON otherwise).
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        init: bool,
    },
    /// An entry of an oc-mirror ImageSetConfiguration (`--from-imageset`), with what oc-mirror
    /// v2 copies of it and where it puts it.
    Imageset {
        /// The file.
        path: String,
        /// The entry, e.g. `mirror.additionalImages[0]`.
        entry: String,
        /// Its `platforms` filter as `os/architecture` (absent: oc-mirror copies every
        /// platform).
        #[serde(skip_serializing_if = "Vec::is_empty")]
        platforms: Vec<String>,
        /// Its `targetRepo`: the repository path oc-mirror writes the image to instead of the
        /// source's.
        #[serde(skip_serializing_if = "Option::is_none")]
        target_repo: Option<String>,
        /// Its `targetTag`: the tag oc-mirror writes instead of the source's.
        #[serde(skip_serializing_if = "Option::is_none")]
        target_tag: Option<String>,
    },
    /// The pause image every Windows pod pulls first (the policy's `windows.sandbox_image`,
    /// WMCO's containerd `sandbox_image`): judged wherever Windows nodes are in scope.
    Sandbox {
        /// What names it: the policy key `windows.sandbox_image`, or `--sandbox-image` (also
        /// `IMGCHECK_SANDBOX_IMAGE`) given in its place.
        key: String,
    },
    /// The Linux and Windows halves of one CSI driver, judged together (`driver-skew`): the
    /// report of a driver has this one origin.
    Driver {
        /// The driver's name.
        driver: String,
        /// How the halves were paired, in words.
        paired_by: String,
        /// The halves at each stage (`current`, `target`).
        stages: Vec<DriverStage>,
    },
    /// The nodes a mirror-check row is for: where nodes of this OS pull the image from.
    Nodes {
        /// `linux` or `windows`.
        os: String,
        /// The runtime that pulls (`cri-o`, `containerd-1.7`).
        runtime: String,
        /// The file it reads its mirrors from (`registries.conf`, `hosts.toml`).
        configured_by: String,
    },
}

impl fmt::Display for Origin {
    /// One line for text reports: `release 4.18.0 (REF) component azure-file-csi-driver`,
    /// `DaemonSet ns/name container csi-driver (ds.yaml)`, `mirror.additionalImages[0] of
    /// isc.yaml (platforms linux/amd64)`, `sandbox image of Windows nodes (policy
    /// windows.sandbox_image)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::Release {
                release,
                version,
                tag,
                ..
            } => match version {
                Some(v) => write!(f, "release {v} ({release}) component {tag}"),
                None => write!(f, "release {release} component {tag}"),
            },
            Origin::Manifest {
                path,
                object,
                container,
                init,
            } => {
                let kind = if *init { "init container" } else { "container" };
                write!(f, "{object} {kind} {container} ({path})")
            }
            Origin::Imageset {
                path,
                entry,
                platforms,
                target_repo,
                target_tag,
            } => {
                write!(f, "{entry} of {path}")?;
                let mut copied = Vec::new();
                if !platforms.is_empty() {
                    copied.push(format!("platforms {}", platforms.join(", ")));
                }
                if let Some(r) = target_repo {
                    copied.push(format!("targetRepo {r}"));
                }
                if let Some(t) = target_tag {
                    copied.push(format!("targetTag {t}"));
                }
                match copied.is_empty() {
                    true => Ok(()),
                    false => write!(f, " ({})", copied.join("; ")),
                }
            }
            Origin::Sandbox { key } if key.starts_with("--") => {
                write!(f, "sandbox image of Windows nodes ({key})")
            }
            Origin::Sandbox { key } => {
                write!(f, "sandbox image of Windows nodes (policy {key})")
            }
            Origin::Driver {
                driver, paired_by, ..
            } => write!(f, "CSI driver {driver} ({paired_by})"),
            Origin::Nodes {
                os,
                runtime,
                configured_by,
            } => write!(f, "{os} nodes ({runtime}, {configured_by})"),
        }
    }
}

/// The judgement of one reference.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ImageReport {
    /// The reference as given.
    pub reference: String,
    /// Where the reference was found (`--from-release`, `--from-manifests`); empty for
    /// references given on the command line or in a list.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub origins: Vec<Origin>,
    /// Digest of the top object, when it was fetched.
    pub digest: Option<String>,
    /// The verdict.
    pub verdict: Verdict,
    /// Findings, errors first.
    pub findings: Vec<Finding>,
    /// The host matrix.
    pub hosts: Vec<HostResult>,
    /// With `--deep`: per image, the program it runs (absent from JSON when empty).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub binaries: Vec<BinaryEntry>,
    /// With `--signatures`: the index and each entry a host pulls, how each stands on
    /// signatures and attestations (absent from JSON when empty).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub signatures: Vec<SignatureEntry>,
    /// The source each image of the graph names (not serialised: the run's driver check
    /// reads it, `driver-skew`).
    #[serde(skip)]
    pub sources: Vec<EntrySource>,
    /// With `--signature-policy`/`--image-policy`: each Linux pull, and what the cluster's
    /// signature policy decides for it (absent from JSON when empty).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub admissions: Vec<AdmissionEntry>,
}

impl ImageReport {
    /// A report for a reference whose top object could not be fetched at all.
    pub fn unavailable(reference: &str, message: &str) -> ImageReport {
        ImageReport {
            reference: reference.to_string(),
            origins: vec![],
            digest: None,
            verdict: Verdict::Error,
            findings: vec![Finding::new(Rule::FetchError, message.to_string(), None)],
            hosts: vec![],
            binaries: vec![],
            signatures: vec![],
            sources: vec![],
            admissions: vec![],
        }
    }

    /// A report for a reference whose tag or repository does not exist: `fail`.
    pub fn not_found(reference: &str, message: &str) -> ImageReport {
        let findings = vec![Finding::new(Rule::NotFound, message.to_string(), None)];
        ImageReport::unread(reference, findings)
    }

    /// A report of `findings` (put in severity order; the verdict theirs) about a reference
    /// whose content was not read.
    pub fn unread(reference: &str, mut findings: Vec<Finding>) -> ImageReport {
        findings.sort_by_key(|f| f.severity);
        ImageReport {
            reference: reference.to_string(),
            origins: vec![],
            digest: None,
            verdict: verdict_of(&findings),
            findings,
            hosts: vec![],
            binaries: vec![],
            signatures: vec![],
            sources: vec![],
            admissions: vec![],
        }
    }

    /// A report for a release component the payload does not have (`release-image-missing`):
    /// `fail`. `reference` names the release and the component, e.g. `REF#NAME`.
    pub fn release_image_missing(reference: &str, message: String, origin: Origin) -> ImageReport {
        let findings = vec![Finding::new(Rule::ReleaseImageMissing, message, None)];
        ImageReport {
            reference: reference.to_string(),
            origins: vec![origin],
            digest: None,
            verdict: verdict_of(&findings),
            findings,
            hosts: vec![],
            binaries: vec![],
            signatures: vec![],
            sources: vec![],
            admissions: vec![],
        }
    }

    /// Number of findings of a severity.
    pub fn count(&self, severity: Severity) -> usize {
        self.findings
            .iter()
            .filter(|f| f.severity == severity)
            .count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(rules: &[Rule]) -> Vec<Finding> {
        rules
            .iter()
            .map(|r| Finding::new(*r, String::new(), None))
            .collect()
    }

    #[test]
    fn verdicts() {
        let cases: &[(&[Rule], Verdict)] = &[
            (&[], Verdict::Pass),
            (&[Rule::ForeignLayer, Rule::Attestation], Verdict::Pass),
            (&[Rule::FetchError], Verdict::Error),
            (&[Rule::FetchError, Rule::UnsupportedBuild], Verdict::Error),
            (&[Rule::FetchError, Rule::NoMatch], Verdict::Fail),
            (&[Rule::DigestMismatch], Verdict::Fail),
            (&[Rule::MirrorTagIgnored], Verdict::Pass),
        ];
        for (rules, want) in cases {
            assert_eq!(verdict_of(&with(rules)), *want, "{rules:?}");
        }
    }

    #[test]
    fn json_names_the_rule_by_id_in_the_same_field_order() {
        let d: Digest = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
            .parse()
            .unwrap();
        let f = Finding::new(Rule::NoMatch, "m".into(), Some(&d)).on_host("h".into());
        let json = serde_json::to_string(&f).unwrap();
        assert_eq!(
            json,
            format!(
                r#"{{"rule":"no-match","severity":"error","message":"m","hint":{},"digest":"{d}","host":"h"}}"#,
                serde_json::to_string(Rule::NoMatch.hint()).unwrap()
            )
        );
        let bare = serde_json::to_string(&Finding::new(Rule::Attestation, "m".into(), None));
        assert!(!bare.unwrap().contains("digest"));
    }

    #[test]
    fn host_status_is_ok_or_the_rule_id() {
        assert_eq!(HostStatus::from(None), HostStatus::Ok);
        let no_match = HostStatus::from(Some(Rule::NoMatch));
        assert_eq!(no_match, HostStatus::Fails(Rule::NoMatch));
        assert_eq!(serde_json::to_value(HostStatus::Ok).unwrap(), "ok");
        assert_eq!(serde_json::to_value(no_match).unwrap(), "no-match");
        assert_eq!(format!("[{:<9}]", no_match), "[no-match ]");
        assert_eq!(HostStatus::Ok.to_string(), "ok");
    }

    #[test]
    fn unavailable_is_a_fetch_error() {
        let r = ImageReport::unavailable("ref", "down");
        assert_eq!(r.verdict, Verdict::Error);
        assert_eq!(r.findings[0].rule, Rule::FetchError);
        assert_eq!(r.count(Severity::Error), 1);
        let r = ImageReport::not_found("ref", "missing");
        assert_eq!(r.verdict, Verdict::Fail);
        assert_eq!(r.findings[0].rule, Rule::NotFound);
    }
}
