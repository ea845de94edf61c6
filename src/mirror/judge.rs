//! Judging the evidence of a mirror check (pure: no I/O, no session). From an [`Evidence`]
//! and the policy: the mirror a node pulls from (`mirror-resolved`), what that mirror lacks
//! or serves corrupted (`mirror-child-missing`, `foreign-layer-not-mirrored`,
//! `digest-mismatch`, …), a rebuilt list under the tag (`mirror-digest-differs`,
//! `mirror-platform-dropped`), or no mirror holding the image at all (`mirror-missing`); and
//! what the nodes pull from the mirror, judged against the policy as `verify` judges it (a
//! faithful copy of a bad list is a bad list).
//! [`add_plan`] adds what the configuration says to a source judged before it is mirrored.

use std::collections::BTreeSet;

use super::gather::{BlobPresence, Evidence, Held, Look, SourceEvidence};
use super::plan::PullPlan;
use super::pull::NodeOs;
use crate::digest::Digest;
use crate::engine::{Finding, ImageReport, Rule, judge_selection, verdict_of};
use crate::error::one_line;
use crate::graph::{Content, Graph, Node, Problem};
use crate::manifest::Descriptor;
use crate::platform::{Platform, RuntimeProfile, build_name};
use crate::policy::Policy;
use crate::reference::RegistryRef;

/// The report for one source reference from its evidence: the plan's findings, then what the
/// first mirror holding something under the pulled name holds, or why none does; and what the
/// nodes of the evidence's OS pull from it, judged as `verify` judges an image for the hosts
/// of `policy` of that OS (its host matrix, under `runtimes`). The plan's findings stand
/// whether or not the source answers: they follow from the configuration alone.
pub fn judge(evidence: &Evidence, policy: &Policy, runtimes: &[RuntimeProfile]) -> ImageReport {
    let name = evidence.reference.to_string();
    let digest = match &evidence.source {
        SourceEvidence::Fetched(g) => &g.root.digest,
        SourceEvidence::Pinned { digest, .. } => digest,
        SourceEvidence::Unavailable(e) => {
            let message = format!("the source could not be fetched: {}", one_line(e));
            let mut report = unread_source(&name, e, &message);
            report
                .findings
                .extend(evidence.plan.findings.iter().cloned());
            report.findings.sort_by_key(|f| f.severity);
            report.verdict = report.verdict.max(verdict_of(&report.findings));
            return report;
        }
    };
    let mut findings = evidence.plan.findings.clone();
    // A node pulls from the first mirror holding something under the pulled name.
    let pulled = evidence.mirrors.iter().enumerate().find_map(|(i, look)| {
        let target = look.target.to_string();
        match &look.held {
            Held::Same { graph, blobs } => {
                let resolved = resolved(evidence, i, digest);
                let found = [vec![resolved], mirror_findings(graph, &target, blobs)].concat();
                Some((found, graph))
            }
            Held::Other(g) => {
                let source = evidence.source.graph();
                Some((diverged_findings(digest, source, g, &target, policy), g))
            }
            Held::Absent | Held::Unreachable(_) => None,
        }
    });
    let mut hosts = Vec::new();
    match pulled {
        Some((found, graph)) => {
            findings.extend(found);
            let pulled = judge_selection(graph, &evidence.os.scope(policy), runtimes);
            // A Windows entry no Linux host selects is no news on the Linux nodes' row.
            let linux = evidence.os == NodeOs::Linux;
            let news = |f: &Finding| !(linux && f.rule == Rule::UnsupportedBuild);
            findings.extend(pulled.findings.into_iter().filter(news));
            hosts = pulled.hosts;
        }
        None => findings.extend(held_by_none(evidence, digest, policy)),
    }
    let mut report = report(&name, Some(digest), findings);
    report.hosts = hosts;
    report
}

/// The report of a source `e` kept from being read, saying `message`: `fail` (`not-found`)
/// when it does not exist — a source that does not exist cannot be mirrored, asking again
/// cannot fix it — else `error` (`fetch-error`).
pub fn unread_source(name: &str, e: &crate::source::FetchError, message: &str) -> ImageReport {
    match e {
        crate::source::FetchError::NotFound(_) => ImageReport::not_found(name, message),
        _ => ImageReport::unavailable(name, message),
    }
}

/// Of `mirrors`, those that do not hold the image and those that could not be reached.
fn passed_over(mirrors: &[Look]) -> (Vec<String>, Vec<String>) {
    let (mut absent, mut unreachable) = (Vec::new(), Vec::new());
    for l in mirrors {
        match &l.held {
            Held::Absent => absent.push(l.target.to_string()),
            Held::Unreachable(e) => unreachable.push(format!("{} ({})", l.target, one_line(e))),
            Held::Same { .. } | Held::Other(_) => {}
        }
    }
    (absent, unreachable)
}

/// `mirror-resolved`: the `i`-th mirror of the plan holds the source's digest.
fn resolved(evidence: &Evidence, i: usize, digest: &Digest) -> Finding {
    let plan = &evidence.plan;
    let (absent, unreachable) = passed_over(&evidence.mirrors[..i]);
    let unreached = match &evidence.source {
        SourceEvidence::Pinned {
            error: Some(error), ..
        } => format!(
            "; the source could not be reached ({}), so the mirror was checked against the pinned digest alone",
            one_line(error)
        ),
        SourceEvidence::Pinned { error: None, .. } => "; the source was not asked \
            (--disconnected), so the mirror was checked against the pinned digest alone"
            .to_string(),
        _ => String::new(),
    };
    Finding::new(
        Rule::MirrorResolved,
        format!(
            "a node pulls it from {} (mirror {} of {}, {}){}{}{unreached}",
            evidence.mirrors[i].target,
            i + 1,
            plan.mirrors.len(),
            plan.mirrors[i].origin,
            if absent.is_empty() {
                String::new()
            } else {
                format!(", after {} which do(es) not hold it", absent.join(", "))
            },
            if unreachable.is_empty() {
                String::new()
            } else {
                format!(
                    ", after {} which could not be reached",
                    unreachable.join(", ")
                )
            },
        ),
        Some(digest),
    )
}

/// No mirror holds the digest: nothing to say without mirrors; no verdict when one could
/// not be asked; a rebuilt list under the tag; else `mirror-missing`.
fn held_by_none(evidence: &Evidence, digest: &Digest, policy: &Policy) -> Vec<Finding> {
    if evidence.plan.mirrors.is_empty() {
        return vec![];
    }
    let (absent, unreachable) = passed_over(&evidence.mirrors);
    if !unreachable.is_empty() {
        return vec![Finding::new(
            Rule::FetchError,
            format!(
                "no reachable mirror holds {digest}, and {} could not be checked",
                unreachable.join(", ")
            ),
            None,
        )];
    }
    if let Some(place) = &evidence.elsewhere {
        return vec![windows_path(evidence, place, digest)];
    }
    if let Some(r) = &evidence.rebuilt {
        let source = evidence.source.graph();
        return diverged_findings(digest, source, &r.graph, &r.target.to_string(), policy);
    }
    let reference = &evidence.reference;
    vec![Finding::new(
        Rule::MirrorMissing,
        format!(
            "{reference}{} is in none of its mirrors ({}): {}",
            if reference.digest.is_some() {
                String::new()
            } else {
                format!(" ({})", digest.short())
            },
            absent.join(", "),
            if evidence.plan.source_blocked {
                "the source may not be contacted, so the pull fails"
            } else {
                "a node falls back to the source, which a disconnected cluster cannot reach"
            }
        ),
        Some(digest),
    )]
}

/// `mirror-windows-path`: the places a Windows node asks lack the image, which the mirror
/// holds where Linux nodes look.
fn windows_path(evidence: &Evidence, place: &RegistryRef, digest: &Digest) -> Finding {
    let reference = &evidence.reference;
    let mut asked: Vec<&str> = Vec::new();
    for url in &evidence.requests {
        if !asked.contains(&url.as_str()) {
            asked.push(url);
        }
    }
    let keep = format!("{}/{}", place.registry, reference.repository);
    Finding::new(
        Rule::MirrorWindowsPath,
        format!(
            "a Windows node requests {} (WMCO's hosts.toml, containerd: the mirror path, then the \
             full source repository), which the mirror does not hold; the mirror holds the image \
             at {place} instead, where Linux nodes look: {}; mirror it keeping the source path \
             (e.g. {keep}) and point the ImageDigestMirrorSet entry at the mirror host \
             (source: {}, mirrors: [{}])",
            asked.join(", then "),
            if evidence.plan.source_blocked {
                "the pull fails"
            } else {
                "the pull falls back to the source, which a disconnected cluster cannot reach"
            },
            reference.registry,
            place.registry
        ),
        Some(digest),
    )
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
            if reported.insert(l.descriptor.digest.clone()) {
                findings.extend(layer_finding(&l.descriptor, node, target, blobs));
            }
        }
    }
    findings
}

/// What is wrong with one layer blob of `node` in the mirror, if anything.
fn layer_finding(
    d: &Descriptor,
    node: &Node,
    target: &str,
    blobs: &BlobPresence,
) -> Option<Finding> {
    let digest = d.digest().ok();
    let (rule, message) = match blobs.get(&d.digest)? {
        Ok(true) => return None,
        Ok(false) if d.is_foreign_layer() => (
            Rule::ForeignLayerNotMirrored,
            format!(
                "foreign layer {} ({}) of {} is not in the mirror {target}{}: a disconnected node cannot fetch it",
                d.digest,
                d.media_type,
                node.digest.short(),
                d.urls.first().map_or(String::new(), |u| format!(
                    " and would have to come from {u}"
                ))
            ),
        ),
        Ok(false) => (
            Rule::MirrorChildMissing,
            format!(
                "layer {} of {} is not in the mirror {target}",
                d.digest,
                node.digest.short()
            ),
        ),
        Err(m) => (
            Rule::FetchError,
            format!(
                "layer {} could not be checked in the mirror {target}: {}",
                d.digest,
                one_line(m)
            ),
        ),
    };
    Some(Finding::new(rule, message, digest.as_ref()))
}

/// What a graph offers a node: entry digests and `(os/arch, Windows build)` pairs (no build
/// for other OSes).
fn offered(graph: &Graph) -> (BTreeSet<String>, BTreeSet<(String, Option<u16>)>) {
    let mut digests = BTreeSet::new();
    let mut platforms = BTreeSet::new();
    let mut add = |d: String, p: Option<Platform>| {
        digests.insert(d);
        if let Some(p) = p {
            platforms.insert((p.os_arch(), build_of(&p)));
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

/// The Windows build of a Windows platform (none for other OSes, or without `os.version`).
fn build_of(p: &Platform) -> Option<u16> {
    p.windows_version()
        .filter(|_| p.is_windows())
        .map(|v| v.build)
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
/// `mirror-digest-differs`, and (when the source graph is known) `mirror-platform-dropped`
/// naming the entries the policy's hosts need that the mirror's content lost.
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
    let dropped = source.map(|s| platforms_dropped(s, mirror, policy));
    if let Some(dropped) = dropped.filter(|d| !d.is_empty()) {
        findings.push(Finding::new(
            Rule::MirrorPlatformDropped,
            format!(
                "the mirror's {target} lost the entries the policy's hosts need: {}; nodes of those platforms get no match",
                dropped.join(", ")
            ),
            None,
        ));
    }
    findings
}

/// The entries of the source's list that a host of the policy needs (its OS and
/// architecture, and for Windows its build) and that the mirror's content offers neither by
/// digest nor by platform.
fn platforms_dropped(source: &Graph, mirror: &Graph, policy: &Policy) -> Vec<String> {
    let Content::Index { index, .. } = &source.root.content else {
        return vec![];
    };
    let needed: BTreeSet<(String, Option<u16>)> = (policy.hosts().iter())
        .map(|h| (h.platform.os_arch(), build_of(&h.platform)))
        .collect();
    let (digests, platforms) = offered(mirror);
    let mut dropped = Vec::new();
    for d in &index.manifests {
        let Some(p) = &d.platform else { continue };
        let claim = (p.os_arch(), build_of(p));
        if !needed.contains(&claim) || digests.contains(&d.digest) || platforms.contains(&claim) {
            continue;
        }
        dropped.push(format!(
            "{}{}{} ({})",
            p.os_arch(),
            p.os_version
                .as_ref()
                .map_or(String::new(), |v| format!(" {v}")),
            claim
                .1
                .and_then(build_name)
                .map_or(String::new(), |n| format!(" {n}")),
            d.digest
        ));
    }
    dropped
}

fn report(reference: &str, digest: Option<&Digest>, mut findings: Vec<Finding>) -> ImageReport {
    findings.sort_by_key(|f| f.severity);
    ImageReport {
        reference: reference.to_string(),
        origins: vec![],
        binaries: vec![],
        signatures: vec![],
        sources: vec![],
        admissions: vec![],
        digest: digest.map(ToString::to_string),
        verdict: verdict_of(&findings),
        findings,
        hosts: vec![],
    }
}

/// `--pre`: what the configuration says of the nodes of `os` pulling the image once it is
/// mirrored — the plan's findings (`mirror-not-configured`, `mirror-tag-ignored`) and the
/// mirror they will pull from — added to `report` (the source's, judged as `verify` does),
/// each marked with the OS; the verdict follows.
pub fn add_plan(report: &mut ImageReport, os: NodeOs, plan: &PullPlan) {
    let os = os.name();
    let found = plan.findings.iter().map(|f| f.clone().for_nodes(os));
    report.findings.extend(found);
    if let Some(first) = plan.mirrors.first() {
        let how = if plan.by_digest { "digest" } else { "tag" };
        let f = Finding::new(
            Rule::MirrorResolved,
            format!(
                "once mirrored, a node pulls it by {how} from {first} ({})",
                first.origin
            ),
            None,
        );
        report.findings.push(f.for_nodes(os));
    }
    report.findings.sort_by_key(|f| f.severity);
    report.verdict = report.verdict.max(verdict_of(&report.findings));
}

#[cfg(test)]
mod tests;
