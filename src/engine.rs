//! The verify rules: a pure function from a verified [`Graph`], a [`Policy`] and runtime
//! profiles to [`Finding`]s, a host matrix and a [`Verdict`].

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::digest::Digest;
use crate::graph::{Content, Graph, LayerFormat, Node, Problem};
use crate::platform::{
    Candidate, Considered, Platform, RuntimeProfile, build_name, matches, select,
};
use crate::policy::Policy;

/// Every rule, with a stable id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Rule {
    /// Single manifest where the policy needs several platforms.
    NotAnIndex,
    /// A supported host would select nothing.
    NoMatch,
    /// A Windows entry has no os.version.
    OsVersionMissing,
    /// An entry's platform disagrees with its config.
    PlatformMismatch,
    /// A supported host would pull an image it cannot run.
    WrongBuildSelected,
    /// A child manifest or config does not exist.
    ChildMissing,
    /// Bytes do not match their digest or size.
    DigestMismatch,
    /// Two runnable entries claim the same platform.
    DuplicatePlatform,
    /// A layer is foreign or non-distributable.
    ForeignLayer,
    /// A Windows layer is not in the Windows layout.
    WindowsLayerFormat,
    /// A Windows entry no supported host selects.
    UnsupportedBuild,
    /// An obsolete schema1 manifest.
    Schema1,
    /// Unparsable content.
    BadManifest,
    /// An attestation entry (never selected).
    Attestation,
    /// Part of the graph could not be fetched.
    FetchError,
    /// No mirror configuration entry covers the reference (mirror-check).
    MirrorNotConfigured,
    /// A tag reference whose mirrors serve digest pulls only (mirror-check).
    MirrorTagIgnored,
    /// No configured mirror holds the image (mirror-check).
    MirrorMissing,
    /// The mirror holds another index than the source under the same name (mirror-check).
    MirrorDigestDiffers,
    /// A child manifest, config or layer is absent from the mirror (mirror-check).
    MirrorChildMissing,
    /// Windows entries for supported builds are not in the mirror's index (mirror-check).
    MirrorWindowsDropped,
    /// A foreign/non-distributable layer's blob is not in the mirror (mirror-check).
    ForeignLayerNotMirrored,
    /// Where the image is pulled from under the mirror configuration (mirror-check).
    MirrorResolved,
}

impl Rule {
    /// The rule's stable id.
    pub fn id(self) -> &'static str {
        match self {
            Rule::NotAnIndex => "not-an-index",
            Rule::NoMatch => "no-match",
            Rule::OsVersionMissing => "os-version-missing",
            Rule::PlatformMismatch => "platform-mismatch",
            Rule::WrongBuildSelected => "wrong-build-selected",
            Rule::ChildMissing => "child-missing",
            Rule::DigestMismatch => "digest-mismatch",
            Rule::DuplicatePlatform => "duplicate-platform",
            Rule::ForeignLayer => "foreign-layer",
            Rule::WindowsLayerFormat => "windows-layer-format",
            Rule::UnsupportedBuild => "unsupported-build",
            Rule::Schema1 => "schema1",
            Rule::BadManifest => "bad-manifest",
            Rule::Attestation => "attestation",
            Rule::FetchError => "fetch-error",
            Rule::MirrorNotConfigured => "mirror-not-configured",
            Rule::MirrorTagIgnored => "mirror-tag-ignored",
            Rule::MirrorMissing => "mirror-missing",
            Rule::MirrorDigestDiffers => "mirror-digest-differs",
            Rule::MirrorChildMissing => "mirror-child-missing",
            Rule::MirrorWindowsDropped => "mirror-windows-dropped",
            Rule::ForeignLayerNotMirrored => "foreign-layer-not-mirrored",
            Rule::MirrorResolved => "mirror-resolved",
        }
    }

    /// How serious a finding of this rule is.
    pub fn severity(self) -> Severity {
        match self {
            Rule::ForeignLayer | Rule::MirrorTagIgnored => Severity::Warning,
            Rule::UnsupportedBuild | Rule::Attestation | Rule::MirrorResolved => Severity::Info,
            _ => Severity::Error,
        }
    }

    /// How to fix it.
    pub fn hint(self) -> &'static str {
        match self {
            Rule::NotAnIndex => {
                "publish a manifest list with one entry per platform (imgcheck assemble)"
            }
            Rule::NoMatch => {
                "add an entry built for this host's Windows build/architecture, with os.version set from the image config"
            }
            Rule::OsVersionMissing => {
                "set os.version on the entry from the image config (buildah manifest add without --all, or imgcheck assemble)"
            }
            Rule::PlatformMismatch => {
                "rebuild the list so each entry's platform is copied from the child's config"
            }
            Rule::WrongBuildSelected => {
                "fix the entry's os.version, or add an entry for this build, so the host selects an image it can run"
            }
            Rule::ChildMissing => {
                "push the missing manifest/blob to the same repository (copy with --all), then re-check"
            }
            Rule::DigestMismatch => {
                "the registry, mirror or layout serves corrupted content: re-push or re-mirror the image"
            }
            Rule::DuplicatePlatform => {
                "remove one of the entries; only the first one in containerd's order is ever pulled"
            }
            Rule::ForeignLayer => {
                "rebase on a base image without foreign layers, or mirror with --include-external / skopeo --preserve-digests"
            }
            Rule::WindowsLayerFormat => {
                "build Windows images with Buildah >= 1.44 (or docker/buildkit on Windows) so layers use Files/ and Hives/"
            }
            Rule::UnsupportedBuild => {
                "drop the entry or add its build to the policy if such nodes exist"
            }
            Rule::Schema1 => {
                "re-push the image with a current tool: schema1 is obsolete and refused by containerd 2"
            }
            Rule::BadManifest => {
                "re-push the image; the content is not a valid OCI/Docker manifest"
            }
            Rule::Attestation => "none needed: attestation entries are metadata, never pulled",
            Rule::FetchError => {
                "check network access, credentials (--authfile) and --tls-verify, then re-run"
            }
            Rule::MirrorNotConfigured => {
                "add the source (or a parent namespace) to an ImageDigestMirrorSet, or reference the image from the mirror directly"
            }
            Rule::MirrorTagIgnored => {
                "reference the image by digest (IDMS mirrors serve digest pulls only), or add an ImageTagMirrorSet"
            }
            Rule::MirrorMissing => {
                "mirror the image with 'skopeo copy --all --preserve-digests' (or oc-mirror) before releasing it"
            }
            Rule::MirrorDigestDiffers => {
                "re-mirror with 'skopeo copy --all --preserve-digests': filtering or re-serialising the list changes its digest and breaks digest references"
            }
            Rule::MirrorChildMissing => {
                "re-mirror with 'skopeo copy --all --preserve-digests' so every child manifest, config and layer is copied"
            }
            Rule::MirrorWindowsDropped => {
                "mirror all platforms: drop --filter-by-os / platform filters, use 'skopeo copy --all'"
            }
            Rule::ForeignLayerNotMirrored => {
                "copy foreign layers too (oc image mirror / regctl --include-external), or rebase on a base without foreign layers"
            }
            Rule::MirrorResolved => "none needed",
        }
    }
}

/// A finding's severity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// The image fails the policy.
    Error,
    /// Worth fixing, does not fail the image.
    Warning,
    /// For information.
    Info,
}

/// One finding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// The rule's id.
    pub rule: &'static str,
    /// Severity.
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

/// What one host selects under one runtime profile.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HostResult {
    /// The host, e.g. `windows/amd64:10.0.17763`.
    pub platform: String,
    /// The runtime profile (`null` for Linux hosts, where profiles agree).
    pub runtime: Option<RuntimeProfile>,
    /// The digest the host pulls, `null` for no match.
    pub selected: Option<String>,
    /// os.version of the selected image's config.
    pub os_version: Option<String>,
    /// `ok`, or the rule id of the problem.
    pub status: String,
}

/// The judgement of one reference.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ImageReport {
    /// The reference as given.
    pub reference: String,
    /// Digest of the top object, when it was fetched.
    pub digest: Option<String>,
    /// The verdict.
    pub verdict: Verdict,
    /// Findings, errors first.
    pub findings: Vec<Finding>,
    /// The host matrix.
    pub hosts: Vec<HostResult>,
}

impl ImageReport {
    /// A report for a reference whose top object could not be fetched at all.
    pub fn unavailable(reference: &str, message: &str) -> ImageReport {
        let mut r = ImageReport {
            reference: reference.to_string(),
            digest: None,
            verdict: Verdict::Error,
            findings: vec![],
            hosts: vec![],
        };
        r.findings
            .push(finding(Rule::FetchError, message.to_string(), None, None));
        r
    }

    /// Number of findings of a severity.
    pub fn count(&self, severity: Severity) -> usize {
        self.findings
            .iter()
            .filter(|f| f.severity == severity)
            .count()
    }
}

impl Finding {
    /// A finding of `rule` with the rule's severity and hint.
    pub fn new(rule: Rule, message: String, digest: Option<&Digest>) -> Finding {
        finding(rule, message, digest, None)
    }
}

/// The verdict for a set of findings: `fail` on any error other than `fetch-error`, else
/// `error` when something could not be fetched, else `pass`.
pub fn verdict_of(findings: &[Finding]) -> Verdict {
    if findings
        .iter()
        .any(|f| f.severity == Severity::Error && f.rule != Rule::FetchError.id())
    {
        Verdict::Fail
    } else if findings.iter().any(|f| f.rule == Rule::FetchError.id()) {
        Verdict::Error
    } else {
        Verdict::Pass
    }
}

fn finding(rule: Rule, message: String, digest: Option<&Digest>, host: Option<String>) -> Finding {
    Finding {
        rule: rule.id(),
        severity: rule.severity(),
        message,
        hint: rule.hint(),
        digest: digest.map(ToString::to_string),
        host,
    }
}

/// The outcome of resolving one host against a graph.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Resolution {
    /// The manifest the host pulls.
    pub digest: Option<String>,
    /// The platform of the selected entry (descriptor, or config for a single image).
    pub platform: Option<Platform>,
    /// The selected image's config platform, when known.
    pub config_platform: Option<Platform>,
    /// Every candidate considered, in containerd's order.
    pub candidates: Vec<CandidateReport>,
    /// Why the selected child could not be judged, if so (missing, corrupt, …).
    #[serde(skip)]
    pub child_problem: Option<Problem>,
}

/// One candidate of a resolution.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CandidateReport {
    /// Entry digest.
    pub digest: String,
    /// Entry platform, if any.
    pub platform: Option<Platform>,
    /// Whether it matches the host.
    pub matched: bool,
    /// Why it was or was not taken.
    pub reason: String,
}

fn config_platform(node: Option<&Node>) -> Option<Platform> {
    node.and_then(Node::image)
        .and_then(|i| i.config.as_ref().ok())
        .map(|c| c.platform())
}

/// Which manifest a node of platform `host` pulls from the graph under `profile`
/// (DOMAIN.md §1): nested indexes are walked the same way.
pub fn resolve(graph: &Graph, host: &Platform, profile: RuntimeProfile) -> Resolution {
    resolve_node(&graph.root, host, profile)
}

fn resolve_node(node: &Node, host: &Platform, profile: RuntimeProfile) -> Resolution {
    match &node.content {
        Content::Index { index, children } => {
            let candidates: Vec<Candidate> = index
                .manifests
                .iter()
                .zip(children)
                .map(|(d, child)| Candidate {
                    platform: d.platform.clone(),
                    config_platform: config_platform(child.as_ref()),
                    runnable: !d.is_attestation(),
                })
                .collect();
            let selection = select(profile, host, &candidates);
            let report = |c: &Considered| CandidateReport {
                digest: index.manifests[c.index].digest.clone(),
                platform: index.manifests[c.index].platform.clone(),
                matched: c.matched,
                reason: c.reason.clone(),
            };
            let candidates_report: Vec<CandidateReport> =
                selection.considered.iter().map(report).collect();
            let Some(i) = selection.selected else {
                return Resolution {
                    digest: None,
                    platform: None,
                    config_platform: None,
                    candidates: candidates_report,
                    child_problem: None,
                };
            };
            let child = children[i].as_ref();
            if let Some(child) = child
                && matches!(child.content, Content::Index { .. })
            {
                let mut inner = resolve_node(child, host, profile);
                let mut all = candidates_report;
                all.append(&mut inner.candidates);
                inner.candidates = all;
                return inner;
            }
            let child_problem = match child.map(|c| &c.content) {
                Some(Content::Problem(p)) => Some(p.clone()),
                Some(Content::Image(img)) => img.config.as_ref().err().cloned(),
                Some(Content::Schema1) => Some(Problem::Bad("schema1 child".into())),
                _ => None,
            };
            Resolution {
                digest: Some(index.manifests[i].digest.clone()),
                platform: index.manifests[i]
                    .platform
                    .clone()
                    .or_else(|| config_platform(child)),
                config_platform: config_platform(child),
                candidates: candidates_report,
                child_problem,
            }
        }
        Content::Image(img) => {
            let cfg = img.config.as_ref().ok().map(|c| c.platform());
            let ok = cfg.as_ref().is_some_and(|p| matches(profile, host, p));
            Resolution {
                digest: ok.then(|| node.digest.to_string()),
                platform: cfg.clone().filter(|_| ok),
                config_platform: cfg.clone(),
                candidates: vec![CandidateReport {
                    digest: node.digest.to_string(),
                    platform: cfg,
                    matched: ok,
                    reason: if ok {
                        "single image; its config matches".into()
                    } else {
                        "single image; its config does not match the host".into()
                    },
                }],
                child_problem: img.config.as_ref().err().cloned(),
            }
        }
        Content::Schema1 | Content::Problem(_) => Resolution {
            digest: None,
            platform: None,
            config_platform: None,
            candidates: vec![],
            child_problem: match &node.content {
                Content::Problem(p) => Some(p.clone()),
                _ => Some(Problem::Bad("schema1 manifest".into())),
            },
        },
    }
}

fn describe(p: &Option<Platform>) -> String {
    p.as_ref()
        .map_or("no platform".to_string(), |p| p.to_string())
}

fn problem_finding(what: &str, digest: &Digest, p: &Problem) -> Finding {
    match p {
        Problem::Missing(m) => finding(
            Rule::ChildMissing,
            format!("{what} {digest} does not exist ({m})"),
            Some(digest),
            None,
        ),
        Problem::DigestMismatch(m) => finding(
            Rule::DigestMismatch,
            format!("{what}: {m}"),
            Some(digest),
            None,
        ),
        Problem::Bad(m) => finding(
            Rule::BadManifest,
            format!("{what} {digest} is unusable: {m}"),
            Some(digest),
            None,
        ),
        Problem::Unavailable(m) => finding(
            Rule::FetchError,
            format!("{what} {digest} could not be fetched: {m}"),
            Some(digest),
            None,
        ),
    }
}

/// Windows build, name and revision text for messages.
fn build_text(p: &Platform) -> String {
    match p.windows_version() {
        Some(v) => match build_name(v.build) {
            Some(n) => format!("{} ({n})", p.os_version.clone().unwrap_or_default()),
            None => p.os_version.clone().unwrap_or_default(),
        },
        None => "no os.version".to_string(),
    }
}

/// Judges one graph.
pub fn judge(graph: &Graph, policy: &Policy, runtimes: &[RuntimeProfile]) -> ImageReport {
    let mut findings = Vec::new();
    let root = &graph.root;

    // Content problems anywhere in the graph.
    for node in graph.nodes() {
        match &node.content {
            Content::Problem(p) => {
                let what = if std::ptr::eq(node, root) {
                    "manifest"
                } else {
                    "child manifest"
                };
                findings.push(problem_finding(what, &node.digest, p));
            }
            Content::Schema1 => findings.push(finding(
                Rule::Schema1,
                format!("{} is an obsolete Docker schema1 manifest", node.digest),
                Some(&node.digest),
                None,
            )),
            Content::Image(img) => {
                if let Err(p) = &img.config
                    && let Ok(d) = img.manifest.config.digest()
                {
                    findings.push(problem_finding(
                        &format!("config of {}", node.digest.short()),
                        &d,
                        p,
                    ));
                }
            }
            Content::Index { .. } => {}
        }
    }

    let hosts = policy.hosts();
    let is_index = matches!(root.content, Content::Index { .. });
    let mut host_results = Vec::new();
    let mut selected_entries: BTreeSet<String> = BTreeSet::new();

    if matches!(root.content, Content::Image(_)) && hosts.len() > 1 {
        let cfg = config_platform(Some(root));
        findings.push(finding(
            Rule::NotAnIndex,
            format!(
                "{} is a single {} image; the policy needs {} platforms ({})",
                root.digest.short(),
                describe(&cfg),
                hosts.len(),
                hosts
                    .iter()
                    .map(|h| h.label())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Some(&root.digest),
            None,
        ));
    } else if is_index || matches!(root.content, Content::Image(_)) {
        // host → outcome → runtimes that share it
        for host in &hosts {
            let profiles: Vec<Option<RuntimeProfile>> = if host.platform.is_windows() {
                runtimes.iter().copied().map(Some).collect()
            } else {
                vec![None]
            };
            let mut outcomes: BTreeMap<(String, Option<String>), Vec<String>> = BTreeMap::new();
            for profile in profiles {
                let r = resolve(
                    graph,
                    &host.platform,
                    profile.unwrap_or(RuntimeProfile::DEFAULT),
                );
                let (status, rule_msg) = match (&r.digest, &r.child_problem) {
                    (None, _) => ("no-match", None),
                    (Some(_), Some(Problem::Missing(_))) => ("child-missing", None),
                    (Some(_), Some(Problem::DigestMismatch(_))) => ("digest-mismatch", None),
                    (Some(_), Some(Problem::Unavailable(_))) => ("fetch-error", None),
                    (Some(_), Some(Problem::Bad(_))) => ("bad-manifest", None),
                    (Some(_), None) => match &r.config_platform {
                        Some(cfg)
                            if !matches(
                                profile.unwrap_or(RuntimeProfile::DEFAULT),
                                &host.platform,
                                cfg,
                            ) =>
                        {
                            ("wrong-build-selected", Some(build_text(cfg)))
                        }
                        _ => ("ok", None),
                    },
                };
                if let Some(d) = &r.digest {
                    selected_entries.insert(d.clone());
                }
                host_results.push(HostResult {
                    platform: host.label(),
                    runtime: profile,
                    selected: r.digest.clone(),
                    os_version: r
                        .config_platform
                        .as_ref()
                        .and_then(|p| p.os_version.clone()),
                    status: status.to_string(),
                });
                if status == "no-match" || status == "wrong-build-selected" {
                    outcomes
                        .entry((status.to_string(), r.digest.clone()))
                        .or_default()
                        .push(format!(
                            "{}{}",
                            profile.map_or(String::new(), |p| p.name().to_string()),
                            rule_msg.map_or(String::new(), |m| format!("|{m}"))
                        ));
                }
            }
            for ((status, digest), runtimes_hit) in outcomes {
                let names: Vec<&str> = runtimes_hit
                    .iter()
                    .map(|s| s.split('|').next().unwrap_or(""))
                    .filter(|s| !s.is_empty())
                    .collect();
                let under = if names.is_empty() {
                    String::new()
                } else {
                    format!(" under {}", names.join(", "))
                };
                let f = if status == "no-match" {
                    let docker = format!(
                        "no matching manifest for {} {} in the manifest list entries",
                        host.platform.os_arch(),
                        host.platform.os_version.clone().unwrap_or_default()
                    );
                    finding(
                        Rule::NoMatch,
                        format!(
                            "{} would select nothing{under}: {}",
                            host.label(),
                            docker.trim_end()
                        ),
                        None,
                        Some(host.label()),
                    )
                } else {
                    let built = runtimes_hit[0].split('|').nth(1).unwrap_or("").to_string();
                    let d: Option<Digest> = digest.as_deref().and_then(|d| d.parse().ok());
                    finding(
                        Rule::WrongBuildSelected,
                        format!(
                            "{} would pull {}{under}, an image built for {built}: it fails at container start",
                            host.label(),
                            d.as_ref().map_or("?".into(), |d| d.short()),
                        ),
                        d.as_ref(),
                        Some(host.label()),
                    )
                };
                findings.push(f);
            }
        }
    }

    if let Content::Index { index, children } = &root.content {
        let mut seen: BTreeMap<String, String> = BTreeMap::new();
        for (d, child) in index.manifests.iter().zip(children) {
            let digest: Option<Digest> = d.digest().ok();
            if d.is_attestation() {
                findings.push(finding(
                    Rule::Attestation,
                    format!(
                        "{} is an attestation entry ({}); it is never pulled",
                        d.digest,
                        d.annotations
                            .get(crate::manifest::ANNOTATION_REFERENCE_TYPE)
                            .map_or("unknown/unknown", String::as_str)
                    ),
                    digest.as_ref(),
                    None,
                ));
                continue;
            }
            let cfg = config_platform(child.as_ref());
            if let Some(p) = &d.platform {
                if p.is_windows() && p.os_version.as_deref().unwrap_or("").is_empty() {
                    findings.push(finding(
                        Rule::OsVersionMissing,
                        format!(
                            "windows entry {} has no os.version{}: it matches every Windows host",
                            d.digest,
                            cfg.as_ref()
                                .and_then(|c| c.os_version.clone())
                                .map_or(String::new(), |v| format!(" (its config says {v})"))
                        ),
                        digest.as_ref(),
                        None,
                    ));
                }
                if let Some(cfg) = &cfg
                    && let Some(why) = platform_disagreement(p, cfg)
                {
                    findings.push(finding(
                        Rule::PlatformMismatch,
                        format!("entry {}: {why}", d.digest),
                        digest.as_ref(),
                        None,
                    ));
                }
                let no_version = p.is_windows() && p.windows_version().is_none();
                let (os, arch, variant) = p.normalized();
                let build = p
                    .windows_version()
                    .map(|v| v.build.to_string())
                    .unwrap_or_default();
                let mut features = p.os_features.clone();
                features.sort();
                let key = format!("{os}/{arch}/{variant}:{build}:{}", features.join(","));
                if no_version {
                    // Reported as os-version-missing; every such entry "claims" every build.
                } else if let Some(first) = seen.get(&key) {
                    findings.push(finding(
                        Rule::DuplicatePlatform,
                        format!("entries {first} and {} both claim {}", d.digest, p),
                        digest.as_ref(),
                        None,
                    ));
                } else {
                    seen.insert(key, d.digest.clone());
                }
                let supported = p
                    .windows_version()
                    .is_some_and(|v| policy.windows_builds().contains(&v.build));
                if p.is_windows()
                    && !no_version
                    && !supported
                    && !selected_entries.contains(&d.digest)
                {
                    findings.push(finding(
                        Rule::UnsupportedBuild,
                        format!(
                            "windows entry {} ({}) is selected by no supported host",
                            d.digest,
                            build_text(p)
                        ),
                        digest.as_ref(),
                        None,
                    ));
                }
            }
        }
    }

    // Layers: foreign, and with --deep, Windows layout.
    let mut foreign_seen = BTreeSet::new();
    for node in graph.nodes() {
        let Some(img) = node.image() else { continue };
        for layer in &img.layers {
            let d = &layer.descriptor;
            if d.is_foreign_layer() && foreign_seen.insert(d.digest.clone()) {
                findings.push(finding(
                    Rule::ForeignLayer,
                    format!(
                        "layer {} ({}) of {} is foreign/non-distributable{}: mirrors leave it out",
                        d.digest,
                        d.media_type,
                        node.digest.short(),
                        d.urls
                            .first()
                            .map_or(String::new(), |u| format!(", served from {u}"))
                    ),
                    d.digest().ok().as_ref(),
                    None,
                ));
            }
            match &layer.format {
                Some(LayerFormat::NotWindows { outside, examples }) => findings.push(finding(
                    Rule::WindowsLayerFormat,
                    format!(
                        "layer {} of windows image {} has {outside} entries outside Files/ and Hives/ (e.g. {}): Windows cannot use it",
                        d.digest,
                        node.digest.short(),
                        examples.join(", ")
                    ),
                    d.digest().ok().as_ref(),
                    None,
                )),
                Some(LayerFormat::Failed(p)) => {
                    if let Ok(ld) = d.digest() {
                        findings.push(problem_finding("layer", &ld, p));
                    }
                }
                _ => {}
            }
        }
    }

    findings.sort_by_key(|f| f.severity);
    let verdict = verdict_of(&findings);
    ImageReport {
        reference: graph.reference.clone(),
        digest: Some(root.digest.to_string()),
        verdict,
        findings,
        hosts: host_results,
    }
}

/// Why a descriptor platform and a config platform disagree, if they do.
fn platform_disagreement(entry: &Platform, config: &Platform) -> Option<String> {
    let (eos, earch, evar) = entry.normalized();
    let (cos, carch, cvar) = config.normalized();
    if (eos.as_str(), earch.as_str(), evar.as_str())
        != (cos.as_str(), carch.as_str(), cvar.as_str())
    {
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
    if set(&entry.os_features) != set(&config.os_features) {
        return Some(format!(
            "the list says os.features [{}] but the image config says [{}]",
            entry.os_features.join(","),
            config.os_features.join(",")
        ));
    }
    None
}

/// One entry as `inspect` shows it: what the list says next to what the image is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EntryView {
    /// Entry digest.
    pub digest: String,
    /// Entry media type.
    pub media_type: String,
    /// Platform written in the list.
    pub platform: Option<Platform>,
    /// Platform of the image config.
    pub config_platform: Option<Platform>,
    /// `attestation`, `ok`, or the problem with the child.
    pub status: String,
}

/// What `inspect` shows for a reference.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct InspectView {
    /// The reference.
    pub reference: String,
    /// Top digest.
    pub digest: String,
    /// `index`, `image`, `schema1` or the problem.
    pub kind: String,
    /// Entries (one for a single image).
    pub entries: Vec<EntryView>,
}

fn status_of(node: Option<&Node>) -> String {
    match node.map(|n| &n.content) {
        None => "not fetched".into(),
        Some(Content::Problem(p)) => p.to_string(),
        Some(Content::Schema1) => "schema1".into(),
        Some(Content::Index { .. }) => "nested index".into(),
        Some(Content::Image(i)) => match &i.config {
            Ok(_) => "ok".into(),
            Err(p) => format!("config {p}"),
        },
    }
}

/// Builds the `inspect` view of a graph.
pub fn inspect(graph: &Graph) -> InspectView {
    let root = &graph.root;
    let (kind, entries) = match &root.content {
        Content::Index { index, children } => (
            "index".to_string(),
            index
                .manifests
                .iter()
                .zip(children)
                .map(|(d, c)| EntryView {
                    digest: d.digest.clone(),
                    media_type: d.media_type.clone(),
                    platform: d.platform.clone(),
                    config_platform: config_platform(c.as_ref()),
                    status: if d.is_attestation() {
                        "attestation".into()
                    } else {
                        status_of(c.as_ref())
                    },
                })
                .collect(),
        ),
        Content::Image(_) => (
            "image".to_string(),
            vec![EntryView {
                digest: root.digest.to_string(),
                media_type: root.media_type.clone(),
                platform: None,
                config_platform: config_platform(Some(root)),
                status: status_of(Some(root)),
            }],
        ),
        Content::Schema1 => ("schema1".to_string(), vec![]),
        Content::Problem(p) => (p.to_string(), vec![]),
    };
    InspectView {
        reference: graph.reference.clone(),
        digest: root.digest.to_string(),
        kind,
        entries,
    }
}

/// The text form of an [`InspectView`].
pub fn inspect_text(view: &InspectView) -> String {
    let mut out = format!("{}  {}  {}\n", view.reference, view.digest, view.kind);
    out.push_str(&format!(
        "  {:<20} {:<34} {:<34} status\n",
        "entry", "list platform", "config platform"
    ));
    for e in &view.entries {
        let p = |p: &Option<Platform>| p.as_ref().map_or("-".to_string(), |p| p.to_string());
        let short = match e.digest.split_once(':') {
            Some((a, h)) if h.len() > 12 => format!("{a}:{}", &h[..12]),
            _ => e.digest.clone(),
        };
        out.push_str(&format!(
            "  {short:<20} {:<34} {:<34} {}\n",
            p(&e.platform),
            p(&e.config_platform),
            e.status
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn win(v: Option<&str>) -> Platform {
        let p = Platform::new("windows", "amd64");
        match v {
            Some(v) => p.with_os_version(v),
            None => p,
        }
    }

    #[test]
    fn platform_disagreements() {
        let mut feat = win(Some("10.0.17763.1"));
        feat.os_features = vec!["win32k".into()];
        let cases: Vec<(Platform, Platform, Option<&str>)> = vec![
            (
                win(Some("10.0.17763.1")),
                win(Some("10.0.17763.5830")),
                None,
            ),
            (
                win(Some("10.0.17763.1")),
                win(Some("10.0.20348.1")),
                Some("os.version"),
            ),
            (
                win(Some("ltsc2019")),
                win(Some("10.0.17763.1")),
                Some("os.version"),
            ),
            (win(Some("10.0.17763.1")), win(None), None),
            (win(None), win(Some("10.0.17763.1")), None),
            (
                Platform::new("linux", "x86_64"),
                Platform::new("linux", "amd64"),
                None,
            ),
            (
                Platform::new("linux", "amd64"),
                Platform::new("linux", "arm64"),
                Some("linux/amd64"),
            ),
            (
                Platform::new("linux", "arm64").with_variant("v8"),
                Platform::new("linux", "arm64"),
                None,
            ),
            (feat.clone(), win(Some("10.0.17763.1")), Some("os.features")),
            (feat.clone(), feat.clone(), None),
        ];
        for (entry, config, want) in cases {
            let got = platform_disagreement(&entry, &config);
            match want {
                None => assert_eq!(got, None, "{entry} vs {config}"),
                Some(w) => assert!(
                    got.as_deref().unwrap_or("").contains(w),
                    "{entry} vs {config}: {got:?}"
                ),
            }
        }
    }

    #[test]
    fn every_rule_has_an_id_severity_and_hint() {
        let rules = [
            Rule::NotAnIndex,
            Rule::NoMatch,
            Rule::OsVersionMissing,
            Rule::PlatformMismatch,
            Rule::WrongBuildSelected,
            Rule::ChildMissing,
            Rule::DigestMismatch,
            Rule::DuplicatePlatform,
            Rule::ForeignLayer,
            Rule::WindowsLayerFormat,
            Rule::UnsupportedBuild,
            Rule::Schema1,
            Rule::BadManifest,
            Rule::Attestation,
            Rule::FetchError,
        ];
        let ids: BTreeSet<&str> = rules.iter().map(|r| r.id()).collect();
        assert_eq!(ids.len(), rules.len(), "ids are unique");
        for r in rules {
            assert!(!r.hint().is_empty());
            assert!(
                r.id()
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c == '-' || c.is_ascii_digit())
            );
        }
        assert_eq!(Rule::ForeignLayer.severity(), Severity::Warning);
        assert_eq!(Rule::Attestation.severity(), Severity::Info);
        assert_eq!(Rule::NoMatch.severity(), Severity::Error);
    }
}
