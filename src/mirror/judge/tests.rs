//! The mirror rules judged over evidence built from the fixture layouts: no registry.

use super::*;
use crate::engine::Verdict;
use crate::mirror::gather::{BlobCheckError, Rebuilt, layers};
use crate::mirror::plan::plan;
use crate::mirror::resolve::resolve;
use crate::mirror::testing::{all_present, config, fixture, ids, reg, rule_ids};
use crate::source::FetchError;

const W17763: &str = "sha256:a41a56813feb41490c49d16e773932b1b976e7ea274765a1ba60d9676e655d9f";
const W20348: &str = "sha256:8888abdb127247b9029b295a056efda3ab86a1b275850c397f6d51b1be2b1b58";

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
    let dropped = rule_ids(&[Rule::MirrorDigestDiffers, Rule::MirrorPlatformDropped]);
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
    let plain = pre_check(&g, &policy, None);
    assert_eq!(plain.verdict, Verdict::Pass);
    let planned = pre_check(&g, &policy, Some(&p));
    assert_eq!(planned.verdict, Verdict::Fail);
    assert_eq!(
        ids(&planned.findings[..1]),
        rule_ids(&[Rule::MirrorNotConfigured])
    );
    assert!(!planned.hosts.is_empty(), "the verify matrix is kept");
}

/// `--pre` for Linux nodes: the source judged as `verify` does, then the plan's findings.
fn pre_check(g: &Graph, policy: &Policy, p: Option<&PullPlan>) -> ImageReport {
    let mut report = crate::engine::judge(g, policy, &policy.runtimes);
    if let Some(p) = p {
        add_plan(&mut report, NodeOs::Linux, p);
    }
    report
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
        // What the nodes pull is judged for the Windows hosts of the policy.
        os: NodeOs::Windows,
        plan,
        source,
        mirrors,
        rebuilt,
        requests: vec![],
        elsewhere: None,
    }
}

fn fetched(g: &Graph) -> SourceEvidence {
    SourceEvidence::Fetched(g.clone())
}

fn pinned(g: &Graph) -> SourceEvidence {
    SourceEvidence::Pinned {
        digest: g.root.digest.clone(),
        error: Some(FetchError::unavailable_by(
            "manifest q.io/open/x",
            refused(),
        )),
    }
}

/// `--disconnected`: the source of a pinned reference is not asked.
fn not_asked(g: &Graph) -> SourceEvidence {
    SourceEvidence::Pinned {
        digest: g.root.digest.clone(),
        error: None,
    }
}

fn same(g: &Graph) -> Held {
    Held::Same {
        graph: g.clone(),
        blobs: all_present(g),
    }
}

fn unreachable() -> Held {
    let timed_out = std::io::Error::from(std::io::ErrorKind::TimedOut);
    Held::Unreachable(FetchError::unavailable_by("manifest m/x", timed_out))
}

/// The cause under a fetch error, as the OS words it.
fn refused() -> std::io::Error {
    std::io::Error::from(std::io::ErrorKind::ConnectionRefused)
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
        let report = judge(&e, &policy, &policy.runtimes);
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
            // What the nodes pull instead is judged too: its attestation entries.
            .finds(&[MirrorDigestDiffers, Attestation, Attestation], Fail)
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
        .finds(&[MirrorDigestDiffers, MirrorPlatformDropped], Fail)
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

/// What the nodes pull from the mirror is judged against the policy: a faithful copy of a
/// list without a WS2019 entry is held exactly, and a WS2019 node pulling it gets no match.
#[tokio::test]
async fn a_faithful_copy_of_a_bad_list_is_a_bad_list() {
    use Rule::*;
    use Verdict::Fail;
    let ltsc2022 = fixture("ltsc2022-only").await;
    run(vec![
        row(
            "faithful copy of a bad list",
            format!("q.io/open/x@{}", ltsc2022.root.digest),
            fetched(&ltsc2022),
        )
        .held(vec![same(&ltsc2022)])
        .finds(&[NoMatch, MirrorResolved], Fail)
        .says(&["10.0.17763"]),
    ]);
}

/// `--disconnected`: a pinned reference's mirror is checked against the digest, its source
/// not asked, and the finding says so.
#[tokio::test]
async fn a_pinned_source_not_asked_is_said() {
    let good = fixture("good").await;
    let pin = format!("q.io/open/x@{}", good.root.digest);
    run(vec![
        row("pinned, source not asked", &pin, not_asked(&good))
            .held(vec![same(&good)])
            .finds(&[Rule::MirrorResolved], Verdict::Pass)
            .says(&["the source was not asked (--disconnected)"]),
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
    let refused_closed =
        crate::source::FetchError::unavailable_by("manifest q.io/closed/x:v1", refused());
    let refused = crate::source::FetchError::unavailable_by("manifest q.io/open/x:v1", refused());
    run(vec![
        row(
            "source unavailable",
            "q.io/open/x:v1",
            SourceEvidence::Unavailable(refused),
        )
        // What the configuration says stands without the source: a tag its mirrors ignore.
        .finds(&[FetchError, MirrorTagIgnored], Error)
        .says(&["the source could not be fetched: manifest q.io/open/x:v1: connection refused"]),
        row(
            "source unavailable, the configuration alone fails the pull",
            "q.io/closed/x:v1",
            SourceEvidence::Unavailable(refused_closed),
        )
        .finds(&[FetchError, MirrorTagIgnored], Fail)
        .says(&["fails, since the source may not be contacted"]),
        row(
            "source does not exist",
            "q.io/open/x:v9",
            SourceEvidence::Unavailable(crate::source::FetchError::NotFound(
                "manifest q.io/open/x:v9".into(),
            )),
        )
        .finds(&[NotFound, MirrorTagIgnored], Fail)
        .says(&["the source could not be fetched: not found"]),
        row("pinned, source unreached", &pin, pinned(&good))
            .held(vec![same(&good)])
            .finds(&[MirrorResolved], Pass)
            .says(&["the source could not be reached (manifest q.io/open/x: connection refused)"]),
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
            .says(&[
                "mirror 2 of 2",
                "(manifest m/x: timed out) which could not be reached",
            ]),
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
    let plain = pre_check(&good, &policy, None);
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
        let got = pre_check(&good, &policy, Some(&p));
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
