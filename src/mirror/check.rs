//! The mirror gate: does the mirror a node would pull from hold the source image exactly?
//!
//! For each source reference: walk the source graph; pick the mirrors the node tries for this
//! pull (by digest, or by tag when a mirror serves tags); the first mirror holding the
//! source's top digest is walked in turn (every child and config fetched and verified by
//! digest) and every layer blob is checked with a `HEAD` — foreign layers included, since a
//! disconnected node cannot follow their `urls`. When no mirror holds the digest but one
//! holds the tag, the mirror's list was rebuilt: its digest differs, and the Windows entries
//! it lost are named. Judging is pure ([`plan`], [`mirror_findings`], [`diverged_findings`]);
//! [`check`] does the fetching.

use std::collections::{BTreeMap, BTreeSet};

use futures::StreamExt;

use super::resolve::{MirrorLocation, Resolution};
use crate::batch::Outcome;
use crate::digest::Digest;
use crate::engine::{Finding, ImageReport, Rule, Severity, judge, verdict_of};
use crate::graph::{Content, Graph, Node, Problem, WalkOptions};
use crate::manifest::Descriptor;
use crate::platform::{Platform, RuntimeProfile, build_name};
use crate::policy::Policy;
use crate::reference::{ImageRef, RegistryRef};
use crate::session::Session;
use crate::source::FetchError;

/// How a node pulls one reference under the mirror configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// The node asks the mirrors by digest (`false`: by tag).
    pub by_digest: bool,
    /// The mirrors it tries, in order.
    pub mirrors: Vec<MirrorLocation>,
    /// The source may not be contacted.
    pub source_blocked: bool,
    /// What is wrong or worth knowing about the plan itself.
    pub findings: Vec<Finding>,
}

/// Works out the pull plan for `reference` (no network): which mirrors, by digest or tag,
/// and the findings `mirror-not-configured` and `mirror-tag-ignored`.
pub fn plan(reference: &RegistryRef, resolution: Option<&Resolution>) -> Plan {
    let name = format!("{}/{}", reference.registry, reference.repository);
    let Some(res) = resolution else {
        return Plan {
            by_digest: reference.digest.is_some(),
            mirrors: vec![],
            source_blocked: false,
            findings: vec![Finding::new(
                Rule::MirrorNotConfigured,
                format!(
                    "no mirror configuration entry covers {name}: a disconnected node pulls it from the source"
                ),
                None,
            )],
        };
    };
    let owned = |v: Vec<&MirrorLocation>| v.into_iter().cloned().collect::<Vec<_>>();
    let mut findings = Vec::new();
    let (by_digest, mirrors) = if reference.digest.is_some() {
        (true, owned(res.mirrors_for(true)))
    } else {
        let by_tag = owned(res.mirrors_for(false));
        if by_tag.is_empty() {
            let by_digest = owned(res.mirrors_for(true));
            if !by_digest.is_empty() {
                let mut f = Finding::new(
                    Rule::MirrorTagIgnored,
                    format!(
                        "{reference} is a tag reference, but the mirrors for {} ({}) serve digest pulls only: \
                         a node pulling this tag {}; checking the mirrors at the source's digest instead",
                        res.prefix,
                        res.origin,
                        if res.source_blocked {
                            "fails, since the source may not be contacted (NeverContactSource/blocked)"
                        } else {
                            "goes to the source"
                        }
                    ),
                    None,
                );
                if res.source_blocked {
                    f.severity = Severity::Error;
                }
                findings.push(f);
            }
            (true, by_digest)
        } else {
            (false, by_tag)
        }
    };
    if mirrors.is_empty() {
        findings.push(Finding::new(
            Rule::MirrorNotConfigured,
            format!(
                "the entry for {} ({}) has no mirror serving {} pulls of {name}",
                res.prefix,
                res.origin,
                if by_digest { "digest" } else { "tag" }
            ),
            None,
        ));
    }
    Plan {
        by_digest,
        mirrors,
        source_blocked: res.source_blocked,
        findings,
    }
}

fn problem_in_mirror(what: &str, digest: &Digest, target: &str, p: &Problem) -> Finding {
    match p {
        Problem::Missing(m) => Finding::new(
            Rule::MirrorChildMissing,
            format!("{what} {digest} is not in the mirror {target} ({m})"),
            Some(digest),
        ),
        Problem::DigestMismatch(m) => Finding::new(
            Rule::DigestMismatch,
            format!("the mirror {target} serves corrupted content for {what}: {m}"),
            Some(digest),
        ),
        Problem::Bad(m) => Finding::new(
            Rule::BadManifest,
            format!("{what} {digest} in the mirror {target} is unusable: {m}"),
            Some(digest),
        ),
        Problem::Unavailable(m) => Finding::new(
            Rule::FetchError,
            format!("{what} {digest} could not be fetched from the mirror {target}: {m}"),
            Some(digest),
        ),
    }
}

/// Every layer of every image in the graph, once per digest.
pub fn layers(graph: &Graph) -> Vec<Descriptor> {
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for node in graph.nodes() {
        if let Some(img) = node.image() {
            for l in &img.layers {
                if seen.insert(l.descriptor.digest.clone()) {
                    out.push(l.descriptor.clone());
                }
            }
        }
    }
    out
}

/// Whether the mirror holds each layer blob (by digest string): `Ok(held)` or why the
/// `HEAD` failed.
pub type BlobPresence = BTreeMap<String, Result<bool, String>>;

/// Findings for a mirror that holds the source's top digest: children and configs that are
/// absent or corrupt (from the mirror walk), and layer blobs it does not hold.
pub fn mirror_findings(mirror: &Graph, target: &str, blobs: &BlobPresence) -> Vec<Finding> {
    let mut findings = Vec::new();
    for node in mirror.nodes() {
        let what = if std::ptr::eq(node, &mirror.root) {
            "the index"
        } else {
            "child manifest"
        };
        match &node.content {
            Content::Problem(p) => findings.push(problem_in_mirror(what, &node.digest, target, p)),
            Content::Image(img) => {
                if let Err(p) = &img.config
                    && let Ok(d) = img.manifest.config.digest()
                {
                    let what = format!("config of {}", node.digest.short());
                    findings.push(problem_in_mirror(&what, &d, target, p));
                }
            }
            Content::Index { .. } | Content::Schema1 => {}
        }
    }
    // A layer shared by several images is reported once.
    let mut reported = BTreeSet::new();
    for node in mirror.nodes() {
        let Some(img) = node.image() else { continue };
        for l in &img.layers {
            let d = &l.descriptor;
            if !reported.insert(d.digest.clone()) {
                continue;
            }
            let digest = d.digest().ok();
            match blobs.get(&d.digest) {
                Some(Ok(false)) if d.is_foreign_layer() => findings.push(Finding::new(
                    Rule::ForeignLayerNotMirrored,
                    format!(
                        "foreign layer {} ({}) of {} is not in the mirror {target}{}: a disconnected node cannot fetch it",
                        d.digest,
                        d.media_type,
                        node.digest.short(),
                        d.urls
                            .first()
                            .map_or(String::new(), |u| format!(" and would have to come from {u}"))
                    ),
                    digest.as_ref(),
                )),
                Some(Ok(false)) => findings.push(Finding::new(
                    Rule::MirrorChildMissing,
                    format!(
                        "layer {} of {} is not in the mirror {target}",
                        d.digest,
                        node.digest.short()
                    ),
                    digest.as_ref(),
                )),
                Some(Err(m)) => findings.push(Finding::new(
                    Rule::FetchError,
                    format!(
                        "layer {} could not be checked in the mirror {target}: {m}",
                        d.digest
                    ),
                    digest.as_ref(),
                )),
                Some(Ok(true)) | None => {}
            }
        }
    }
    findings
}

/// What a graph offers a Windows node: entry digests and `(os/arch, build)` pairs.
fn offered(graph: &Graph) -> (BTreeSet<String>, BTreeSet<(String, u16)>) {
    let mut digests = BTreeSet::new();
    let mut platforms = BTreeSet::new();
    let mut add = |d: String, p: Option<Platform>| {
        digests.insert(d);
        if let Some(p) = p
            && let Some(v) = p.windows_version()
        {
            platforms.insert((p.os_arch(), v.build));
        }
    };
    match &graph.root.content {
        Content::Index { index, children } => {
            for (d, child) in index.manifests.iter().zip(children) {
                let p = d
                    .platform
                    .clone()
                    .or_else(|| config_platform(child.as_ref()));
                add(d.digest.clone(), p);
            }
        }
        Content::Image(_) => add(
            graph.root.digest.to_string(),
            config_platform(Some(&graph.root)),
        ),
        Content::Schema1 | Content::Problem(_) => {}
    }
    (digests, platforms)
}

fn config_platform(node: Option<&Node>) -> Option<Platform> {
    node.and_then(Node::image)
        .and_then(|i| i.config.as_ref().ok())
        .map(|c| c.platform())
}

fn describe(graph: &Graph) -> String {
    match &graph.root.content {
        Content::Index { index, .. } => format!("a list of {} entries", index.manifests.len()),
        Content::Image(_) => format!(
            "a single {} image",
            config_platform(Some(&graph.root)).map_or("?".into(), |p| p.os_arch())
        ),
        Content::Schema1 => "a schema1 manifest".into(),
        Content::Problem(_) => "unusable content".into(),
    }
}

/// Findings for a mirror whose tag names other content than the source's `digest`:
/// `mirror-digest-differs`, and (when the source graph is known) `mirror-windows-dropped`
/// naming the Windows entries of supported builds (policy) the mirror's content lost.
pub fn diverged_findings(
    digest: &Digest,
    source: Option<&Graph>,
    mirror: &Graph,
    target: &str,
    policy: &Policy,
) -> Vec<Finding> {
    let mut findings = vec![Finding::new(
        Rule::MirrorDigestDiffers,
        format!(
            "the mirror's {target} is {} ({}), not the source's {digest}{}: references pinned to {} do not resolve in the mirror",
            mirror.root.digest,
            describe(mirror),
            source.map_or(String::new(), |s| format!(" ({})", describe(s))),
            digest.short()
        ),
        Some(&mirror.root.digest),
    )];
    let Some(Content::Index { index, .. }) = source.map(|s| &s.root.content) else {
        return findings;
    };
    let builds = policy.windows_builds();
    let archs: Vec<String> = policy
        .windows
        .as_ref()
        .map(|w| w.architectures.iter().map(ToString::to_string).collect())
        .unwrap_or_default();
    let (digests, platforms) = offered(mirror);
    let mut dropped = Vec::new();
    for d in &index.manifests {
        let Some(p) = &d.platform else { continue };
        let Some(v) = p.windows_version() else {
            continue;
        };
        let (_, arch, _) = p.normalized();
        if !p.is_windows() || !builds.contains(&v.build) || !archs.contains(&arch) {
            continue;
        }
        if digests.contains(&d.digest) || platforms.contains(&(p.os_arch(), v.build)) {
            continue;
        }
        dropped.push(format!(
            "{} {}{} ({})",
            p.os_arch(),
            p.os_version.clone().unwrap_or_default(),
            build_name(v.build).map_or(String::new(), |n| format!(" {n}")),
            d.digest
        ));
    }
    if !dropped.is_empty() {
        findings.push(Finding::new(
            Rule::MirrorWindowsDropped,
            format!(
                "the mirror's {target} lost the Windows entries for supported builds: {}; nodes of those builds get no match",
                dropped.join(", ")
            ),
            None,
        ));
    }
    findings
}

fn report(reference: &str, digest: Option<&Digest>, mut findings: Vec<Finding>) -> ImageReport {
    findings.sort_by_key(|f| f.severity);
    ImageReport {
        reference: reference.to_string(),
        digest: digest.map(ToString::to_string),
        verdict: verdict_of(&findings),
        findings,
        hosts: vec![],
    }
}

/// `--pre`: the source judged against the policy as `verify` does, plus the plan findings
/// (`mirror-not-configured`, `mirror-tag-ignored`) when a mirror configuration is given.
pub fn pre_check(
    graph: &Graph,
    policy: &Policy,
    runtimes: &[RuntimeProfile],
    mirror_plan: Option<&Plan>,
) -> ImageReport {
    let mut r = judge(graph, policy, runtimes);
    if let Some(p) = mirror_plan {
        r.findings.extend(p.findings.iter().cloned());
        if let Some(first) = p.mirrors.first() {
            r.findings.push(Finding::new(
                Rule::MirrorResolved,
                format!(
                    "once mirrored, a node pulls it by {} from {first} ({})",
                    if p.by_digest { "digest" } else { "tag" },
                    first.origin
                ),
                None,
            ));
        }
        r.findings.sort_by_key(|f| f.severity);
        r.verdict = verdict_of(&r.findings);
    }
    r
}

/// What one mirror holds for the pull.
enum Held {
    /// The source's top digest.
    Same(Graph),
    /// Other content under the tag.
    Other(Graph),
    /// Nothing.
    Absent,
}

async fn look(
    session: &Session,
    target: &RegistryRef,
    digest: &Digest,
    options: WalkOptions,
) -> Result<Held, FetchError> {
    match session
        .graph(&ImageRef::Registry(target.clone()), options)
        .await
    {
        Ok(g) if g.root.digest == *digest => Ok(Held::Same(g)),
        Ok(g) => Ok(Held::Other(g)),
        Err(FetchError::NotFound(_)) => Ok(Held::Absent),
        Err(e) => Err(e),
    }
}

/// Checks one source reference against its mirrors. `Err` only for bad input (exit 2); a
/// source or mirror that cannot be reached gives an `error` verdict.
pub async fn check(
    session: &Session,
    reference: &RegistryRef,
    resolution: Option<&Resolution>,
    policy: &Policy,
    options: WalkOptions,
) -> Result<ImageReport, FetchError> {
    let name = reference.to_string();
    // A pinned reference can be checked from inside the disconnected network, where the
    // source is out of reach: the digest alone says what the mirror must hold.
    let (source, digest, unreached) = match session
        .graph(&ImageRef::Registry(reference.clone()), options)
        .await
    {
        Ok(g) => {
            let d = g.root.digest.clone();
            (Some(g), d, None)
        }
        Err(e @ FetchError::BadInput(_)) => return Err(e),
        Err(e) => match &reference.digest {
            Some(d) => (None, d.clone(), Some(e.to_string())),
            None => {
                return Ok(ImageReport::unavailable(
                    &name,
                    &format!("the source could not be fetched: {e}"),
                ));
            }
        },
    };
    let source = source.as_ref();
    let p = plan(reference, resolution);
    let mut findings = p.findings.clone();
    let mut absent: Vec<String> = Vec::new();
    let mut unreachable_mirrors: Vec<String> = Vec::new();
    for (i, m) in p.mirrors.iter().enumerate() {
        let target = if p.by_digest {
            m.repository.with_digest(&digest)
        } else {
            RegistryRef {
                tag: reference.tag.clone(),
                ..m.repository.clone()
            }
        };
        let held = match look(session, &target, &digest, options).await {
            Ok(h) => h,
            Err(e @ FetchError::BadInput(_)) => return Err(e),
            // A node falls through to the next mirror when one fails: so does the check.
            Err(e) => {
                unreachable_mirrors.push(format!("{target} ({e})"));
                continue;
            }
        };
        match held {
            Held::Absent => absent.push(target.to_string()),
            Held::Other(g) => {
                findings.extend(diverged_findings(
                    &digest,
                    source,
                    &g,
                    &target.to_string(),
                    policy,
                ));
                return Ok(report(&name, Some(&digest), findings));
            }
            Held::Same(g) => {
                findings.push(Finding::new(
                    Rule::MirrorResolved,
                    format!(
                        "a node pulls it from {target} (mirror {} of {}, {}){}{}{}",
                        i + 1,
                        p.mirrors.len(),
                        m.origin,
                        if absent.is_empty() {
                            String::new()
                        } else {
                            format!(", after {} which do(es) not hold it", absent.join(", "))
                        },
                        if unreachable_mirrors.is_empty() {
                            String::new()
                        } else {
                            format!(
                                ", after {} which could not be reached",
                                unreachable_mirrors.join(", ")
                            )
                        },
                        unreached.as_deref().map_or(String::new(), |e| format!(
                            "; the source could not be reached ({e}), so the mirror was checked against the pinned digest alone"
                        ))
                    ),
                    Some(&digest),
                ));
                let blobs = blob_presence(session, &target, &g, options.jobs).await;
                findings.extend(mirror_findings(&g, &target.to_string(), &blobs));
                return Ok(report(&name, Some(&digest), findings));
            }
        }
    }
    if p.mirrors.is_empty() {
        return Ok(report(&name, Some(&digest), findings));
    }
    // No mirror holds it for sure, and at least one could not be asked: not a verdict.
    if !unreachable_mirrors.is_empty() {
        findings.push(Finding::new(
            Rule::FetchError,
            format!(
                "no reachable mirror holds {digest}, and {} could not be checked",
                unreachable_mirrors.join(", ")
            ),
            None,
        ));
        return Ok(report(&name, Some(&digest), findings));
    }
    // No mirror holds the digest. A rebuilt list under the same tag explains why.
    if p.by_digest
        && let Some(tag) = &reference.tag
    {
        for m in &p.mirrors {
            let tagged = RegistryRef {
                tag: Some(tag.clone()),
                ..m.repository.clone()
            };
            if let Ok(Held::Other(g)) = look(session, &tagged, &digest, options).await {
                findings.extend(diverged_findings(
                    &digest,
                    source,
                    &g,
                    &tagged.to_string(),
                    policy,
                ));
                return Ok(report(&name, Some(&digest), findings));
            }
        }
    }
    findings.push(Finding::new(
        Rule::MirrorMissing,
        format!(
            "{}{} is in none of its mirrors ({}): {}",
            name,
            if reference.digest.is_some() {
                String::new()
            } else {
                format!(" ({})", digest.short())
            },
            absent.join(", "),
            if p.source_blocked {
                "the source may not be contacted, so the pull fails"
            } else {
                "a node falls back to the source, which a disconnected cluster cannot reach"
            }
        ),
        Some(&digest),
    ));
    Ok(report(&name, Some(&digest), findings))
}

/// One source reference to check, with its resolution under the mirror configuration.
#[derive(Debug, Clone)]
pub struct Target {
    /// The source reference.
    pub reference: ImageRef,
    /// Where a node pulls it from (`None`: no entry covers it, or no configuration).
    pub resolution: Option<Resolution>,
}

/// Settings of a mirror-check run.
#[derive(Debug, Clone)]
pub struct MirrorRun {
    /// The policy (supported Windows builds; with `pre`, the whole verify policy).
    pub policy: Policy,
    /// A mirror configuration was given (plan findings apply).
    pub configured: bool,
    /// Check the sources before mirroring instead of the mirrors.
    pub pre: bool,
    /// Walk options (per image).
    pub walk: WalkOptions,
    /// Images in flight at once.
    pub images_in_flight: usize,
}

/// Resolves every reference under `config`; refuses OCI layouts when a configuration is
/// given (the cluster mirrors registry references only).
pub fn targets(
    config: &super::config::MirrorConfig,
    configured: bool,
    refs: &[ImageRef],
) -> Result<Vec<Target>, String> {
    refs.iter()
        .map(|r| {
            let resolution = match r {
                ImageRef::Registry(reg) if configured => {
                    super::resolve::resolve(config, reg).map_err(|e| e.to_string())?
                }
                ImageRef::Layout(_) if configured => {
                    return Err(format!(
                        "{r}: mirror-check needs registry references (an OCI layout is not mirrored by the cluster)"
                    ));
                }
                _ => None,
            };
            Ok(Target {
                reference: r.clone(),
                resolution,
            })
        })
        .collect()
}

/// Checks every target, at most `images_in_flight` at once, calling `on_done` as each
/// finishes; results in input order. Without `pre`, each mirror is checked ([`check`]);
/// with `pre`, each source is judged ([`pre_check`]).
pub async fn check_all(
    session: &Session,
    targets: &[Target],
    run: &MirrorRun,
    on_done: &(dyn Fn(&Outcome) + Sync),
) -> Vec<Outcome> {
    crate::batch::run_bounded(targets, run.images_in_flight, on_done, |t| async move {
        match (&t.reference, run.pre) {
            (ImageRef::Registry(reg), false) => {
                match check(session, reg, t.resolution.as_ref(), &run.policy, run.walk).await {
                    Ok(r) => Outcome::Report(r),
                    Err(e) => Outcome::BadInput(e.to_string()),
                }
            }
            (r, _) => match session.graph(r, run.walk).await {
                Ok(g) => {
                    let p = match r {
                        ImageRef::Registry(reg) if run.configured => {
                            Some(plan(reg, t.resolution.as_ref()))
                        }
                        _ => None,
                    };
                    Outcome::Report(pre_check(&g, &run.policy, &run.policy.runtimes, p.as_ref()))
                }
                Err(e) => Outcome::fetch_failed(r, e),
            },
        }
    })
    .await
}

/// `HEAD`s every layer blob of the mirror graph, `jobs` at a time.
async fn blob_presence(
    session: &Session,
    target: &RegistryRef,
    graph: &Graph,
    jobs: usize,
) -> BlobPresence {
    let pending = layers(graph).into_iter().map(|d| async move {
        let result = match d.digest() {
            Ok(digest) => session
                .blob_exists(target, &digest)
                .await
                .map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        };
        (d.digest, result)
    });
    futures::stream::iter(pending)
        .buffer_unordered(jobs.max(1))
        .collect()
        .await
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::graph::walk;
    use crate::mirror::config::MirrorConfig;
    use crate::mirror::resolve::resolve;
    use crate::reference::LayoutRef;
    use crate::source::layout::LayoutSource;

    async fn fixture(name: &str) -> Graph {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures/layouts")
            .join(name);
        let source = LayoutSource::open(&LayoutRef {
            dir,
            tag: Some("latest".into()),
            digest: None,
        })
        .unwrap();
        walk(&source, WalkOptions::default()).await.unwrap()
    }

    fn rules(findings: &[Finding]) -> Vec<&'static str> {
        findings.iter().map(|f| f.rule.id()).collect()
    }

    fn all_present(g: &Graph) -> BlobPresence {
        layers(g)
            .into_iter()
            .map(|d| (d.digest, Ok(true)))
            .collect()
    }

    const W17763: &str = "sha256:1ad013b9a54258102621a04e7a93682913ae33d6dbdc7311e2a725b347ea7c78";
    const W20348: &str = "sha256:e684e61f21acb02e853ac43b5ff531d4596f45a396bacd0de431f1cb5e70b83e";

    #[tokio::test]
    async fn a_complete_mirror_has_no_findings() {
        let g = fixture("good").await;
        assert!(mirror_findings(&g, "m/x", &all_present(&g)).is_empty());
    }

    #[tokio::test]
    async fn absent_children_configs_and_layers_are_named() {
        let g = fixture("missing-child").await;
        let f = mirror_findings(&g, "m/x", &all_present(&g));
        assert_eq!(rules(&f), ["mirror-child-missing"]);
        assert_eq!(f[0].digest.as_deref(), Some(W20348));
        let g = fixture("corrupt-config").await;
        assert_eq!(
            rules(&mirror_findings(&g, "m/x", &all_present(&g))),
            ["digest-mismatch"]
        );
        // A layer blob the mirror does not hold, or could not say.
        let g = fixture("good").await;
        let mut blobs = all_present(&g);
        let layer = layers(&g).into_iter().next().expect("images have layers");
        blobs.insert(layer.digest.clone(), Ok(false));
        let f = mirror_findings(&g, "m/x", &blobs);
        assert_eq!(rules(&f), ["mirror-child-missing"]);
        assert!(f[0].message.contains(&layer.digest), "{}", f[0].message);
        blobs.insert(layer.digest.clone(), Err("HTTP 500".into()));
        assert_eq!(rules(&mirror_findings(&g, "m/x", &blobs)), ["fetch-error"]);
    }

    #[tokio::test]
    async fn foreign_layers_must_be_in_the_mirror() {
        let g = fixture("foreign-layer").await;
        let mut blobs = all_present(&g);
        assert!(mirror_findings(&g, "m/x", &blobs).is_empty());
        let foreign: Vec<String> = layers(&g)
            .into_iter()
            .filter(Descriptor::is_foreign_layer)
            .map(|d| d.digest)
            .collect();
        assert_eq!(foreign.len(), 2);
        for d in &foreign {
            blobs.insert(d.clone(), Ok(false));
        }
        let f = mirror_findings(&g, "m/x", &blobs);
        assert_eq!(
            rules(&f),
            ["foreign-layer-not-mirrored", "foreign-layer-not-mirrored"]
        );
        assert!(
            f[0].message.contains("mcr.microsoft.com"),
            "{}",
            f[0].message
        );
    }

    #[tokio::test]
    async fn a_rebuilt_list_names_the_windows_entries_it_lost() {
        let source = fixture("good").await;
        let policy = Policy::default_policy();
        let filtered = fixture("ltsc2022-only").await;
        let f = diverged_findings(
            &source.root.digest,
            Some(&source),
            &filtered,
            "m/x:v1",
            &policy,
        );
        assert_eq!(
            rules(&f),
            ["mirror-digest-differs", "mirror-windows-dropped"]
        );
        assert!(f[1].message.contains(W17763), "{}", f[1].message);
        assert!(f[1].message.contains("10.0.17763.5830"), "{}", f[1].message);
        assert!(!f[1].message.contains(W20348), "{}", f[1].message);
        // A single-platform copy (skopeo copy without --all) loses every Windows entry.
        let single = fixture("single-arch").await;
        let f = diverged_findings(
            &source.root.digest,
            Some(&source),
            &single,
            "m/x:v1",
            &policy,
        );
        assert_eq!(
            rules(&f),
            ["mirror-digest-differs", "mirror-windows-dropped"]
        );
        assert!(
            f[0].message.contains("single linux/amd64 image"),
            "{}",
            f[0].message
        );
        assert!(f[1].message.contains(W17763) && f[1].message.contains(W20348));
        // Same children in another list (re-serialised): only the digest differs.
        let attest = fixture("attestation").await;
        assert_eq!(
            rules(&diverged_findings(
                &source.root.digest,
                Some(&source),
                &attest,
                "m/x:v1",
                &policy
            )),
            ["mirror-digest-differs"]
        );
        // Without the source graph (unreachable source) only the digest can be compared.
        assert_eq!(
            rules(&diverged_findings(
                &source.root.digest,
                None,
                &single,
                "m/x:v1",
                &policy
            )),
            ["mirror-digest-differs"]
        );
        // Builds outside the policy are not required.
        let linux_only = Policy::load("linux-only").unwrap();
        assert_eq!(
            rules(&diverged_findings(
                &source.root.digest,
                Some(&source),
                &single,
                "m/x:v1",
                &linux_only
            )),
            ["mirror-digest-differs"]
        );
    }

    fn reg(s: &str) -> RegistryRef {
        match s.parse::<ImageRef>() {
            Ok(ImageRef::Registry(r)) => r,
            other => panic!("{s}: {other:?}"),
        }
    }

    #[test]
    fn plans() {
        let d = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
        let mut c = MirrorConfig::default();
        c.add_mirror_sets(
            Path::new("s.yaml"),
            "apiVersion: config.openshift.io/v1\nkind: ImageDigestMirrorSet\nmetadata: {name: d}\n\
             spec:\n  imageDigestMirrors:\n  - source: q.io/open\n    mirrors: [m.local/open]\n  \
             - source: q.io/closed\n    mirrors: [m.local/closed]\n    mirrorSourcePolicy: NeverContactSource\n\
             ---\napiVersion: config.openshift.io/v1\nkind: ImageTagMirrorSet\nmetadata: {name: t}\n\
             spec:\n  imageTagMirrors:\n  - source: q.io/tags\n    mirrors: [t.local/tags]\n",
        )
        .unwrap();
        /// (reference, by digest, mirrors, rules, first finding's severity)
        type Case<'a> = (String, bool, &'a [&'a str], &'a [&'a str], Option<Severity>);
        let cases: &[Case] = &[
            (
                format!("q.io/open/x@{d}"),
                true,
                &["m.local/open/x"],
                &[],
                None,
            ),
            (
                "q.io/open/x:v1".into(),
                true,
                &["m.local/open/x"],
                &["mirror-tag-ignored"],
                Some(Severity::Warning),
            ),
            (
                "q.io/closed/x:v1".into(),
                true,
                &["m.local/closed/x"],
                &["mirror-tag-ignored"],
                Some(Severity::Error),
            ),
            (
                "q.io/tags/x:v1".into(),
                false,
                &["t.local/tags/x"],
                &[],
                None,
            ),
            (
                format!("q.io/tags/x@{d}"),
                true,
                &[],
                &["mirror-not-configured"],
                Some(Severity::Error),
            ),
            (
                "q.io/other/x:v1".into(),
                false,
                &[],
                &["mirror-not-configured"],
                Some(Severity::Error),
            ),
        ];
        for (r, by_digest, mirrors, want, severity) in cases {
            let r = reg(r);
            let res = resolve(&c, &r).unwrap();
            let p = plan(&r, res.as_ref());
            assert_eq!(p.by_digest, *by_digest, "{r}");
            let got: Vec<String> = p.mirrors.iter().map(ToString::to_string).collect();
            assert_eq!(got, *mirrors, "{r}");
            assert_eq!(rules(&p.findings), *want, "{r}");
            assert_eq!(p.findings.first().map(|f| f.severity), *severity, "{r}");
        }
    }

    #[tokio::test]
    async fn pre_check_adds_the_plan_to_the_verify_verdict() {
        let g = fixture("good").await;
        let policy = Policy::default_policy();
        let r = reg("q.io/other/x:v1");
        let p = plan(&r, None);
        let plain = pre_check(&g, &policy, &policy.runtimes, None);
        assert_eq!(plain.verdict, crate::engine::Verdict::Pass);
        let planned = pre_check(&g, &policy, &policy.runtimes, Some(&p));
        assert_eq!(planned.verdict, crate::engine::Verdict::Fail);
        assert_eq!(planned.findings[0].rule.id(), "mirror-not-configured");
        assert!(!planned.hosts.is_empty(), "the verify matrix is kept");
    }
}
