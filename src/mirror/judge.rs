//! Judging the evidence of a mirror check (pure: no I/O, no session). From an [`Evidence`]
//! and the policy: the mirror a node pulls from (`mirror-resolved`), what that mirror lacks
//! or serves corrupted (`mirror-child-missing`, `foreign-layer-not-mirrored`,
//! `digest-mismatch`, …), a rebuilt list under the tag (`mirror-digest-differs`,
//! `mirror-windows-dropped`), or no mirror holding the image at all (`mirror-missing`).
//! [`pre_check`] judges a source before it is mirrored.

use std::collections::BTreeSet;

use super::gather::{BlobPresence, Evidence, Held, Look, SourceEvidence};
use super::plan::Plan;
use crate::digest::Digest;
use crate::engine::{Finding, ImageReport, Rule, judge as verify, verdict_of};
use crate::graph::{Content, Graph, Node, Problem};
use crate::manifest::Descriptor;
use crate::platform::{Platform, RuntimeProfile, build_name};
use crate::policy::Policy;

/// The report for one source reference from its evidence: the plan's findings, then what
/// the first mirror holding something under the pulled name holds, or why none does.
pub fn judge(evidence: &Evidence, policy: &Policy) -> ImageReport {
    let name = evidence.reference.to_string();
    let digest = match &evidence.source {
        SourceEvidence::Fetched(g) => &g.root.digest,
        SourceEvidence::Pinned { digest, .. } => digest,
        SourceEvidence::Unavailable(e) => {
            let message = format!("the source could not be fetched: {e}");
            return ImageReport::unavailable(&name, &message);
        }
    };
    let mut findings = evidence.plan.findings.clone();
    let target = |l: &Look| l.target.to_string();
    for (i, look) in evidence.mirrors.iter().enumerate() {
        match &look.held {
            Held::Absent | Held::Unreachable(_) => continue,
            Held::Other(g) => findings.extend(diverged_findings(
                digest,
                evidence.source.graph(),
                g,
                &target(look),
                policy,
            )),
            Held::Same { graph, blobs } => {
                findings.push(resolved(evidence, i, digest));
                findings.extend(mirror_findings(graph, &target(look), blobs));
            }
        }
        return report(&name, Some(digest), findings);
    }
    findings.extend(held_by_none(evidence, digest, policy));
    report(&name, Some(digest), findings)
}

/// Of `mirrors`, those that do not hold the image and those that could not be reached.
fn passed_over(mirrors: &[Look]) -> (Vec<String>, Vec<String>) {
    let (mut absent, mut unreachable) = (Vec::new(), Vec::new());
    for l in mirrors {
        match &l.held {
            Held::Absent => absent.push(l.target.to_string()),
            Held::Unreachable(e) => unreachable.push(format!("{} ({e})", l.target)),
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
        SourceEvidence::Pinned { error, .. } => format!(
            "; the source could not be reached ({error}), so the mirror was checked against the pinned digest alone"
        ),
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
                "layer {} could not be checked in the mirror {target}: {m}",
                d.digest
            ),
        ),
    };
    Some(Finding::new(rule, message, digest.as_ref()))
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
    let dropped = source.map(|s| windows_dropped(s, mirror, policy));
    if let Some(dropped) = dropped.filter(|d| !d.is_empty()) {
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

/// The Windows entries of the source's list, for builds and architectures the policy
/// supports, that the mirror's content offers neither by digest nor by platform.
fn windows_dropped(source: &Graph, mirror: &Graph, policy: &Policy) -> Vec<String> {
    let Content::Index { index, .. } = &source.root.content else {
        return vec![];
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
    dropped
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
    let mut r = verify(graph, policy, runtimes);
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

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::engine::Verdict;
    use crate::mirror::config::MirrorConfig;
    use crate::mirror::gather::{BlobCheckError, Rebuilt, layers};
    use crate::mirror::plan::plan;
    use crate::mirror::resolve::resolve;
    use crate::mirror::testing::{all_present, fixture, ids, reg, rule_ids};
    use crate::source::FetchError;

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
        assert_eq!(ids(&f), rule_ids(&[Rule::MirrorChildMissing]));
        assert_eq!(f[0].digest.as_deref(), Some(W20348));
        let g = fixture("corrupt-config").await;
        assert_eq!(
            ids(&mirror_findings(&g, "m/x", &all_present(&g))),
            rule_ids(&[Rule::DigestMismatch])
        );
        // A layer blob the mirror does not hold, or could not say.
        let g = fixture("good").await;
        let mut blobs = all_present(&g);
        let layer = layers(&g).into_iter().next().expect("images have layers");
        blobs.insert(layer.digest.clone(), Ok(false));
        let f = mirror_findings(&g, "m/x", &blobs);
        assert_eq!(ids(&f), rule_ids(&[Rule::MirrorChildMissing]));
        assert!(f[0].message.contains(&layer.digest), "{}", f[0].message);
        let http_500 = BlobCheckError::Head(FetchError::Unavailable("HTTP 500".into()));
        blobs.insert(layer.digest.clone(), Err(http_500));
        let f = mirror_findings(&g, "m/x", &blobs);
        assert_eq!(ids(&f), rule_ids(&[Rule::FetchError]));
        assert!(f[0].message.ends_with(": HTTP 500"), "{}", f[0].message);
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
            ids(&f),
            rule_ids(&[Rule::ForeignLayerNotMirrored, Rule::ForeignLayerNotMirrored])
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
        let differs = rule_ids(&[Rule::MirrorDigestDiffers]);
        let dropped = rule_ids(&[Rule::MirrorDigestDiffers, Rule::MirrorWindowsDropped]);
        let digest = source.root.digest.clone();
        let diverged = |source: Option<&Graph>, mirror: &Graph, policy: &Policy| {
            diverged_findings(&digest, source, mirror, "m/x:v1", policy)
        };
        let filtered = fixture("ltsc2022-only").await;
        let f = diverged(Some(&source), &filtered, &policy);
        assert_eq!(ids(&f), dropped);
        assert!(f[1].message.contains(W17763), "{}", f[1].message);
        assert!(f[1].message.contains("10.0.17763.5830"), "{}", f[1].message);
        assert!(!f[1].message.contains(W20348), "{}", f[1].message);
        // A single-platform copy (skopeo copy without --all) loses every Windows entry.
        let single = fixture("single-arch").await;
        let f = diverged(Some(&source), &single, &policy);
        assert_eq!(ids(&f), dropped);
        assert!(
            f[0].message.contains("single linux/amd64 image"),
            "{}",
            f[0].message
        );
        assert!(f[1].message.contains(W17763) && f[1].message.contains(W20348));
        // Same children in another list (re-serialised): only the digest differs.
        let attest = fixture("attestation").await;
        assert_eq!(ids(&diverged(Some(&source), &attest, &policy)), differs);
        // Without the source graph (unreachable source) only the digest can be compared.
        assert_eq!(ids(&diverged(None, &single, &policy)), differs);
        // Builds outside the policy are not required.
        let linux_only = Policy::load("linux-only").unwrap();
        assert_eq!(ids(&diverged(Some(&source), &single, &linux_only)), differs);
    }

    #[tokio::test]
    async fn pre_check_adds_the_plan_to_the_verify_verdict() {
        let g = fixture("good").await;
        let policy = Policy::default_policy();
        let r = reg("q.io/other/x:v1");
        let p = plan(&r, None);
        let plain = pre_check(&g, &policy, &policy.runtimes, None);
        assert_eq!(plain.verdict, Verdict::Pass);
        let planned = pre_check(&g, &policy, &policy.runtimes, Some(&p));
        assert_eq!(planned.verdict, Verdict::Fail);
        assert_eq!(
            ids(&planned.findings[..1]),
            rule_ids(&[Rule::MirrorNotConfigured])
        );
        assert!(!planned.hosts.is_empty(), "the verify matrix is kept");
    }

    /// The mirror configuration of the evidence tables: digest mirrors for `q.io/open`,
    /// `q.io/closed` (source blocked) and `q.io/two` (two mirrors), tag mirrors for `q.io/tags`.
    fn config() -> MirrorConfig {
        let mut c = MirrorConfig::default();
        c.add_mirror_sets(
            Path::new("s.yaml"),
            "apiVersion: config.openshift.io/v1\nkind: ImageDigestMirrorSet\nmetadata: {name: d}\n\
             spec:\n  imageDigestMirrors:\n  - source: q.io/open\n    mirrors: [m.local/open]\n  \
             - source: q.io/closed\n    mirrors: [m.local/closed]\n    mirrorSourcePolicy: NeverContactSource\n  \
             - source: q.io/two\n    mirrors: [a.local/two, b.local/two]\n\
             ---\napiVersion: config.openshift.io/v1\nkind: ImageTagMirrorSet\nmetadata: {name: t}\n\
             spec:\n  imageTagMirrors:\n  - source: q.io/tags\n    mirrors: [t.local/tags]\n",
        )
        .unwrap();
        c
    }

    /// Evidence for `reference`: what the source gave, what the plan's mirrors hold (in
    /// order), and what the first mirror holds under the tag.
    fn evidence(
        reference: &str,
        source: SourceEvidence,
        held: Vec<Held>,
        rebuilt: Option<&Graph>,
    ) -> Evidence {
        let reference = reg(reference);
        let plan = plan(&reference, resolve(&config(), &reference).unwrap().as_ref());
        let mirrors = match source.digest() {
            Some(d) => (plan.mirrors.iter().zip(held))
                .map(|(m, held)| Look {
                    target: plan.pulled_name(m, &reference, d),
                    held,
                })
                .collect(),
            None => vec![],
        };
        let rebuilt = rebuilt.map(|g| Rebuilt {
            target: crate::reference::RegistryRef {
                tag: reference.tag.clone(),
                ..plan.mirrors[0].repository.clone()
            },
            graph: g.clone(),
        });
        Evidence {
            reference,
            plan,
            source,
            mirrors,
            rebuilt,
        }
    }

    fn fetched(g: &Graph) -> SourceEvidence {
        SourceEvidence::Fetched(g.clone())
    }

    fn pinned(g: &Graph) -> SourceEvidence {
        SourceEvidence::Pinned {
            digest: g.root.digest.clone(),
            error: FetchError::Unavailable("connection refused".into()),
        }
    }

    fn same(g: &Graph) -> Held {
        Held::Same {
            graph: g.clone(),
            blobs: all_present(g),
        }
    }

    fn unreachable() -> Held {
        Held::Unreachable(FetchError::Unavailable("timed out".into()))
    }

    /// The mirror holds the graph but none of its foreign layers.
    fn without_foreign_layers(g: &Graph) -> Held {
        let mut blobs = all_present(g);
        for d in layers(g).into_iter().filter(Descriptor::is_foreign_layer) {
            blobs.insert(d.digest, Ok(false));
        }
        Held::Same {
            graph: g.clone(),
            blobs,
        }
    }

    /// One row of an evidence table: the evidence (reference, source, what each mirror
    /// holds, what the first holds under the tag), the rules found (in report order), the
    /// verdict, and text the findings' messages must hold.
    struct Row {
        name: &'static str,
        reference: String,
        source: SourceEvidence,
        held: Vec<Held>,
        rebuilt: Option<Graph>,
        rules: Vec<Rule>,
        verdict: Verdict,
        says: Vec<String>,
    }

    fn row(name: &'static str, reference: impl Into<String>, source: SourceEvidence) -> Row {
        Row {
            name,
            reference: reference.into(),
            source,
            held: vec![],
            rebuilt: None,
            rules: vec![],
            verdict: Verdict::Pass,
            says: vec![],
        }
    }

    impl Row {
        fn held(mut self, held: Vec<Held>) -> Row {
            self.held = held;
            self
        }

        fn rebuilt(mut self, g: &Graph) -> Row {
            self.rebuilt = Some(g.clone());
            self
        }

        fn finds(mut self, rules: &[Rule], verdict: Verdict) -> Row {
            self.rules = rules.to_vec();
            self.verdict = verdict;
            self
        }

        fn says(mut self, texts: &[&str]) -> Row {
            self.says.extend(texts.iter().map(ToString::to_string));
            self
        }
    }

    fn run(rows: Vec<Row>) {
        let policy = Policy::default_policy();
        for r in rows {
            let e = evidence(&r.reference, r.source, r.held, r.rebuilt.as_ref());
            let report = judge(&e, &policy);
            assert_eq!(ids(&report.findings), rule_ids(&r.rules), "{}", r.name);
            assert_eq!(report.verdict, r.verdict, "{}", r.name);
            let messages: Vec<&str> = report.findings.iter().map(|f| &*f.message).collect();
            for text in &r.says {
                assert!(
                    messages.iter().any(|m| m.contains(text.as_str())),
                    "{}: want '{text}' in {messages:#?}",
                    r.name
                );
            }
        }
    }

    /// One row per mirror rule.
    #[tokio::test]
    async fn each_mirror_rule_from_its_evidence() {
        use Rule::*;
        use Verdict::{Fail, Pass};
        let good = fixture("good").await;
        let d = good.root.digest.clone();
        let (child, foreign) = (
            fixture("missing-child").await,
            fixture("foreign-layer").await,
        );
        let ltsc2022 = fixture("ltsc2022-only").await;
        let attestation = fixture("attestation").await;
        let (c, f) = (&child.root.digest, &foreign.root.digest);
        run(vec![
            row("not configured", "q.io/other/x:v1", fetched(&good))
                .finds(&[MirrorNotConfigured], Fail)
                .says(&["no mirror configuration entry covers q.io/other/x"]),
            row("tag ignored", "q.io/open/x:v1", fetched(&good))
                .held(vec![same(&good)])
                .finds(&[MirrorTagIgnored, MirrorResolved], Pass)
                .says(&[
                    "serve digest pulls only",
                    "goes to the source",
                    "mirror 1 of 1",
                ]),
            row("missing", format!("q.io/closed/x@{d}"), fetched(&good))
                .held(vec![Held::Absent])
                .finds(&[MirrorMissing], Fail)
                .says(&[
                    "in none of its mirrors (m.local/closed/x@",
                    "the pull fails",
                ]),
            row("digest differs", "q.io/tags/x:v1", fetched(&good))
                .held(vec![Held::Other(attestation)])
                .finds(&[MirrorDigestDiffers], Fail)
                .says(&["the mirror's t.local/tags/x:v1 is"]),
            row("child missing", format!("q.io/open/x@{c}"), fetched(&child))
                .held(vec![same(&child)])
                .finds(&[MirrorChildMissing, MirrorResolved], Fail)
                .says(&[W20348]),
            row(
                "windows dropped",
                format!("q.io/open/x:v1@{d}"),
                fetched(&good),
            )
            .held(vec![Held::Absent])
            .rebuilt(&ltsc2022)
            .finds(&[MirrorDigestDiffers, MirrorWindowsDropped], Fail)
            .says(&["m.local/open/x:v1", W17763]),
            row(
                "foreign layer",
                format!("q.io/open/x@{f}"),
                fetched(&foreign),
            )
            .held(vec![without_foreign_layers(&foreign)])
            .finds(
                &[
                    ForeignLayerNotMirrored,
                    ForeignLayerNotMirrored,
                    MirrorResolved,
                ],
                Fail,
            )
            .says(&["mcr.microsoft.com"]),
            row("resolved", format!("q.io/open/x@{d}"), fetched(&good))
                .held(vec![same(&good)])
                .finds(&[MirrorResolved], Pass)
                .says(&[
                    "a node pulls it from m.local/open/x@sha256:",
                    "mirror 1 of 1",
                ]),
        ]);
    }

    /// The other ways a check ends: the source or a mirror out of reach, mirrors passed over.
    #[tokio::test]
    async fn unreachable_sources_and_mirrors_passed_over() {
        use Rule::*;
        use Verdict::{Error, Fail, Pass};
        let good = fixture("good").await;
        let single = fixture("single-arch").await;
        let d = good.root.digest.clone();
        let (pin, two) = (format!("q.io/open/x@{d}"), format!("q.io/two/x@{d}"));
        let refused = crate::source::FetchError::Unavailable("connection refused".into());
        run(vec![
            row(
                "source unavailable",
                "q.io/open/x:v1",
                SourceEvidence::Unavailable(refused),
            )
            .finds(&[FetchError], Error)
            .says(&["the source could not be fetched: connection refused"]),
            row("pinned, source unreached", &pin, pinned(&good))
                .held(vec![same(&good)])
                .finds(&[MirrorResolved], Pass)
                .says(&["the source could not be reached (connection refused)"]),
            row("second mirror", &two, fetched(&good))
                .held(vec![Held::Absent, same(&good)])
                .finds(&[MirrorResolved], Pass)
                .says(&[
                    "mirror 2 of 2",
                    "after a.local/two/x@",
                    "do(es) not hold it",
                ]),
            row("first unreachable", &two, fetched(&good))
                .held(vec![unreachable(), same(&good)])
                .finds(&[MirrorResolved], Pass)
                .says(&["mirror 2 of 2", "(timed out) which could not be reached"]),
            row("none reachable holds it", &two, fetched(&good))
                .held(vec![unreachable(), Held::Absent])
                .finds(&[FetchError], Error)
                .says(&["no reachable mirror holds", "a.local/two/x@"]),
            row("in no mirror", &two, fetched(&good))
                .held(vec![Held::Absent, Held::Absent])
                .finds(&[MirrorMissing], Fail)
                .says(&["falls back to the source"]),
            row(
                "rebuilt, source unreached",
                format!("q.io/open/x:v1@{d}"),
                pinned(&good),
            )
            .held(vec![Held::Absent])
            .rebuilt(&single)
            .finds(&[MirrorDigestDiffers], Fail)
            .says(&["single linux/amd64 image"]),
            row(
                "no digest mirror",
                format!("q.io/tags/x@{d}"),
                fetched(&good),
            )
            .finds(&[MirrorNotConfigured], Fail)
            .says(&["has no mirror serving digest pulls"]),
        ]);
    }

    /// `--pre`: what the plan adds to the verify findings of a good source.
    #[tokio::test]
    async fn pre_check_paths() {
        use Rule::*;
        let good = fixture("good").await;
        let d = good.root.digest.clone();
        let policy = Policy::default_policy();
        let plain = pre_check(&good, &policy, &policy.runtimes, None);
        let c = config();
        let cases: &[(String, &[Rule], Verdict, &str)] = &[
            (
                "q.io/other/x:v1".into(),
                &[MirrorNotConfigured],
                Verdict::Fail,
                "covers q.io/other/x",
            ),
            (
                format!("q.io/open/x@{d}"),
                &[MirrorResolved],
                Verdict::Pass,
                "by digest from m.local/open/x (s.yaml",
            ),
            (
                "q.io/tags/x:v1".into(),
                &[MirrorResolved],
                Verdict::Pass,
                "by tag from t.local/tags/x",
            ),
            (
                "q.io/open/x:v1".into(),
                &[MirrorTagIgnored, MirrorResolved],
                Verdict::Pass,
                "goes to the source",
            ),
            (
                "q.io/closed/x:v1".into(),
                &[MirrorTagIgnored, MirrorResolved],
                Verdict::Fail,
                "fails, since",
            ),
        ];
        for (r, rules, verdict, says) in cases {
            let r = reg(r);
            let p = plan(&r, resolve(&c, &r).unwrap().as_ref());
            let got = pre_check(&good, &policy, &policy.runtimes, Some(&p));
            let mut added = got.findings.clone();
            added.retain(|f| !plain.findings.contains(f));
            assert_eq!(ids(&added), rule_ids(rules), "{r}");
            assert_eq!(got.verdict, *verdict, "{r}");
            assert!(
                added.iter().any(|f| f.message.contains(says)),
                "{r}: want '{says}' in {added:#?}"
            );
            assert_eq!(got.hosts, plain.hosts, "{r}: the verify matrix is kept");
        }
    }
}
