//! Every verify rule, in process: `judge` over each fixture layout read through the layout
//! source (no registry, no subprocess), one row per layout naming the exact set of rules it
//! produces and its verdict, plus rows for the rules no layout can trigger.
//!
//! Mirror rules (`mirror-*`, `foreign-layer-not-mirrored`) judge a source graph against a
//! mirror's: they are covered by the unit tests in `src/mirror/check.rs` and by
//! `tests/mirror.rs`, not here.

use std::collections::BTreeSet;
use std::path::Path;

use imgcheck::engine::{HostStatus, ImageReport, Origin, Rule, Verdict, judge};
use imgcheck::graph::{Content, Graph, Problem, WalkOptions, walk};
use imgcheck::policy::{Isolation, Policy};
use imgcheck::reference::{ImageRef, LayoutRef};
use imgcheck::run::{Outcome, Scope, Target};
use imgcheck::source::layout::LayoutSource;

/// One fixture layout and what judging it under a policy (the default unless named) must give.
struct Row {
    /// Directory under `fixtures/layouts/`.
    layout: &'static str,
    /// The embedded policy to judge under.
    policy: &'static str,
    /// Read Windows layers too (`--deep`).
    deep: bool,
    verdict: Verdict,
    /// The exact set of rules among the findings.
    rules: &'static [Rule],
    /// Hosts whose status is not `ok`: (host, status).
    hosts: &'static [(&'static str, &'static str)],
}

const fn row(
    layout: &'static str,
    verdict: Verdict,
    rules: &'static [Rule],
    hosts: &'static [(&'static str, &'static str)],
) -> Row {
    Row {
        layout,
        policy: "openshift",
        deep: false,
        verdict,
        rules,
        hosts,
    }
}

const W17763: &str = "windows/amd64:10.0.17763";
const W20348: &str = "windows/amd64:10.0.20348";

const ROWS: &[Row] = &[
    row("good", Verdict::Pass, &[], &[]),
    row("docker-list", Verdict::Pass, &[], &[]),
    row("os-features", Verdict::Pass, &[], &[]),
    row("legacy-buildah", Verdict::Pass, &[], &[]),
    Row {
        deep: true,
        // The old layout puts csi.exe outside Files/: no Windows path reaches it.
        ..row(
            "legacy-buildah",
            Verdict::Fail,
            &[
                Rule::WindowsLayerFormat,
                Rule::EntrypointMissing,
                Rule::NoSourceRevision,
            ],
            &[],
        )
    },
    row("attestation", Verdict::Pass, &[Rule::Attestation], &[]),
    row("foreign-layer", Verdict::Pass, &[Rule::ForeignLayer], &[]),
    Row {
        deep: true,
        // csi.exe is read from the top layer; the foreign base layers are not.
        ..row(
            "foreign-layer",
            Verdict::Pass,
            &[
                Rule::ForeignLayer,
                Rule::LayerNotChecked,
                Rule::NoSourceRevision,
            ],
            &[],
        )
    },
    row(
        "with-ltsc2025",
        Verdict::Pass,
        &[Rule::UnsupportedBuild],
        &[],
    ),
    row(
        "no-os-version",
        Verdict::Fail,
        &[Rule::OsVersionMissing, Rule::WrongBuildSelected],
        &[(W20348, "wrong-build-selected")],
    ),
    row(
        "ltsc2022-only",
        Verdict::Fail,
        &[Rule::NoMatch],
        &[(W17763, "no-match")],
    ),
    row(
        "platform-mismatch",
        Verdict::Fail,
        &[Rule::PlatformMismatch, Rule::WrongBuildSelected],
        &[(W17763, "wrong-build-selected")],
    ),
    row(
        "missing-child",
        Verdict::Fail,
        &[Rule::ChildMissing],
        &[(W20348, "child-missing")],
    ),
    row(
        "corrupt-config",
        Verdict::Fail,
        &[Rule::DigestMismatch],
        &[(W17763, "digest-mismatch")],
    ),
    row(
        "truncated-manifest",
        Verdict::Fail,
        &[Rule::DigestMismatch],
        &[("linux/amd64", "digest-mismatch")],
    ),
    row("single-arch", Verdict::Fail, &[Rule::NotAnIndex], &[]),
    row("schema1", Verdict::Fail, &[Rule::Schema1], &[]),
    row(
        "duplicate-platform",
        Verdict::Fail,
        &[Rule::DuplicatePlatform],
        &[],
    ),
    row("bad-json", Verdict::Fail, &[Rule::BadManifest], &[]),
    row("wrong-media-type", Verdict::Fail, &[Rule::BadManifest], &[]),
    // Issue 12 (node-truth). Upstream's `-windows-hp` shape: one windows/amd64 entry, no
    // os.version anywhere. Process isolation: os-version-missing (its hint names
    // windows.isolation); HostProcess pods run it on every build.
    row("windows-hp", Verdict::Fail, &[Rule::OsVersionMissing], &[]),
    hostprocess(row("windows-hp", Verdict::Pass, &[], &[])),
    row(
        "windows-hp-only",
        Verdict::Fail,
        &[Rule::NoMatch, Rule::OsVersionMissing],
        &[("linux/amd64", "no-match")],
    ),
    hostprocess(row(
        "windows-hp-only",
        Verdict::Fail,
        &[Rule::NoMatch],
        &[("linux/amd64", "no-match")],
    )),
    row(
        "linux-only-list",
        Verdict::Fail,
        &[Rule::NoMatch],
        &[(W17763, "no-match"), (W20348, "no-match")],
    ),
    // HostProcess: pull-time matching is not relaxed (containerd#7431)…
    hostprocess(row(
        "ltsc2022-only",
        Verdict::Fail,
        &[Rule::NoMatch],
        &[(W17763, "no-match")],
    )),
    // …a pulled image of another build runs, and an entry without os.version is the right shape…
    hostprocess(row("no-os-version", Verdict::Pass, &[], &[])),
    // …but a descriptor that contradicts its config is still wrong.
    hostprocess(row(
        "platform-mismatch",
        Verdict::Fail,
        &[Rule::PlatformMismatch],
        &[],
    )),
    // A made-up os.version on the descriptor of an image whose config has none: a warning in
    // both modes (it passed silently before).
    row(
        "hp-claimed-version",
        Verdict::Pass,
        &[Rule::OsVersionNotInConfig],
        &[],
    ),
    hostprocess(row(
        "hp-claimed-version",
        Verdict::Pass,
        &[Rule::OsVersionNotInConfig],
        &[],
    )),
    // containerd core/images/image.go `Manifest`: a platform-less child index is walked
    // (it was a no-match for both Windows hosts).
    row("nested-index", Verdict::Pass, &[], &[]),
    // containers/image: gzip and zstd instances of one platform are alternates (it was a
    // duplicate-platform).
    row("zstd-pair", Verdict::Pass, &[], &[]),
];

/// The same row judged under the embedded `openshift-hostprocess` policy.
const fn hostprocess(row: Row) -> Row {
    Row {
        policy: "openshift-hostprocess",
        ..row
    }
}

async fn graph(layout: &str, deep: bool) -> Graph {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/layouts")
        .join(layout);
    let source = LayoutSource::open(&LayoutRef {
        dir,
        tag: Some("latest".into()),
        digest: None,
    })
    .unwrap();
    let options = WalkOptions {
        deep,
        ..WalkOptions::default()
    };
    walk(&source, options).await.unwrap()
}

fn judge_default(graph: &Graph) -> ImageReport {
    judge_under(graph, "openshift")
}

fn judge_under(graph: &Graph, policy: &str) -> ImageReport {
    let policy = Policy::load(policy).unwrap();
    judge(graph, &policy, &policy.runtimes)
}

fn rules(report: &ImageReport) -> BTreeSet<Rule> {
    report.findings.iter().map(|f| f.rule).collect()
}

fn failing_hosts(report: &ImageReport) -> BTreeSet<(&str, &str)> {
    report
        .hosts
        .iter()
        .filter(|h| h.status != HostStatus::Ok)
        .map(|h| (h.platform.as_str(), h.status.id()))
        .collect()
}

/// Checks one report against a row's expectations; returns the rules it produced.
fn check(name: &str, report: &ImageReport, row: &Row) -> BTreeSet<Rule> {
    let got = rules(report);
    let want: BTreeSet<Rule> = row.rules.iter().copied().collect();
    assert_eq!(got, want, "{name}: {:#?}", report.findings);
    assert_eq!(report.verdict, row.verdict, "{name}");
    let hosts: BTreeSet<(&str, &str)> = row.hosts.iter().copied().collect();
    assert_eq!(failing_hosts(report), hosts, "{name}");
    for f in &report.findings {
        // A Linux host's no-match has its own hint (the rule's speaks of Windows builds).
        let linux_no_match =
            f.rule == Rule::NoMatch && f.host.as_deref().is_some_and(|h| h.starts_with("linux/"));
        if !linux_no_match {
            assert_eq!(f.hint, f.rule.hint(), "{name}: {}", f.rule);
        }
        assert!(!f.message.is_empty(), "{name}: {}", f.rule);
    }
    got
}

/// A graph of `good` whose windows 20348 child could not be fetched (network, auth): no
/// layout can serve that, since a layout either has a file or does not.
async fn unreachable_child() -> Graph {
    let mut g = graph("good", false).await;
    let Content::Index { index, children } = &mut g.root.content else {
        panic!("good is an index")
    };
    let at = index
        .manifests
        .iter()
        .position(|d| {
            d.platform
                .as_ref()
                .and_then(|p| p.os_version.as_deref())
                .is_some_and(|v| v.starts_with("10.0.20348"))
        })
        .expect("good has a windows 20348 entry");
    let child = children[at].as_mut().expect("fetched");
    child.content = Content::Problem(Problem::Unavailable("connection refused".into()));
    g
}

/// Gives every Windows image of `g` (read with `--deep`) a found PE program importing
/// NETAPI32.dll, which it lacks, and a revision label of its own.
fn deep_program_with_a_missing_dll_and_skewed_labels(g: &mut Graph) {
    let Content::Index { children, .. } = &mut g.root.content else {
        panic!("good is an index")
    };
    for (i, child) in children.iter_mut().flatten().enumerate() {
        let Content::Image(image) = &mut child.content else {
            continue;
        };
        let Ok(config) = &mut image.config else {
            continue;
        };
        config.run.labels.insert(
            "org.opencontainers.image.revision".into(),
            format!("{i}{i}{i}{i}{i}{i}{i}"),
        );
        let Some(entry) = &mut image.entry else {
            continue;
        };
        let binary = imgcheck::binary::BinaryInfo {
            format: imgcheck::binary::BinaryFormat::Pe(imgcheck::binary::PeInfo {
                machine: 0x8664,
                magic: Some(0x20b),
                subsystem: Some(3),
                imports: vec!["NETAPI32.dll".into()],
            }),
            go: None,
            incomplete: vec![],
        };
        entry.programs[0].outcome = imgcheck::graph::LookupOutcome::Found {
            path: "C:\\csi.exe".into(),
            binary: Box::new(binary),
            dlls: Some(Ok(vec!["NETAPI32.dll".into()])),
        };
    }
}

/// Gives every Windows image of `g` (read with `--deep`) a found program that is a Linux
/// x86-64 ELF: what a cross-compile without `GOOS=windows` ships.
fn deep_program_built_for_linux(g: &mut Graph) {
    let Content::Index { children, .. } = &mut g.root.content else {
        panic!("good is an index")
    };
    for child in children.iter_mut().flatten() {
        let Content::Image(image) = &mut child.content else {
            continue;
        };
        let Some(entry) = &mut image.entry else {
            continue;
        };
        let binary = imgcheck::binary::BinaryInfo {
            format: imgcheck::binary::BinaryFormat::Elf(imgcheck::binary::ElfInfo {
                class: imgcheck::binary::ElfClass::Elf64,
                endian: imgcheck::binary::Endian::Little,
                machine: 62,
                arm_arch: None,
            }),
            go: None,
            incomplete: vec![],
        };
        entry.programs[0].outcome = imgcheck::graph::LookupOutcome::Found {
            path: "C:\\csi.exe".into(),
            binary: Box::new(binary),
            dlls: None,
        };
    }
}

/// The report for `good` pinned to a digest the layout does not hold.
async fn not_found_report() -> ImageReport {
    let digest = format!("sha256:{}", "0".repeat(64));
    let layout = LayoutRef {
        dir: Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/layouts/good"),
        tag: None,
        digest: Some(digest.parse().unwrap()),
    };
    let source = LayoutSource::open(&layout).unwrap();
    let error = walk(&source, WalkOptions::default()).await.unwrap_err();
    match Outcome::fetch_failed(&ImageRef::Layout(layout), error) {
        Outcome::Report(r) => r,
        Outcome::BadInput(m) => panic!("a missing digest is not bad input: {m}"),
    }
}

#[tokio::test]
async fn every_fixture_layout_gives_its_rules_and_verdict() {
    let mut covered = BTreeSet::new();
    for row in ROWS {
        let g = graph(row.layout, row.deep).await;
        let report = judge_under(&g, row.policy);
        let name = format!("{} (deep: {}, {})", row.layout, row.deep, row.policy);
        covered.extend(check(&name, &report, row));
    }

    let fetch = Row {
        deep: false,
        ..row(
            "good with an unreachable child",
            Verdict::Error,
            &[Rule::FetchError],
            &[(W20348, "fetch-error")],
        )
    };
    let report = judge_default(&unreachable_child().await);
    covered.extend(check(fetch.layout, &report, &fetch));

    // A reference whose top object does not exist: the layout has no such digest.
    let missing = not_found_report().await;
    let absent = row(
        "good pinned to a digest it lacks",
        Verdict::Fail,
        &[Rule::NotFound],
        &[],
    );
    covered.extend(check(absent.layout, &missing, &absent));

    // A Windows-only DaemonSet's image on a cluster without Windows hosts (--from-manifests):
    // the scope is empty, so only the content is judged, and a warning says so.
    let g = graph("windows-hp-only", false).await;
    let policy = Policy::default_policy();
    let target = Target {
        reference: ImageRef::Layout(LayoutRef {
            dir: Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/layouts/windows-hp-only"),
            tag: None,
            digest: None,
        }),
        origins: vec![],
        scope: Some(Box::new(Scope {
            policy: policy.scoped(|_| false, Isolation::Hostprocess),
            placement: "kubernetes.io/os In [windows]".into(),
            runs_nowhere: None,
        })),
        landings: vec![],
    };
    let nowhere = row(
        "windows-hp-only, pods landing nowhere",
        Verdict::Pass,
        &[Rule::NoHostInScope],
        &[],
    );
    covered.extend(check(
        nowhere.layout,
        &target.judge(&g, &policy, &policy.runtimes),
        &nowhere,
    ));

    // A release component the payload lacks (--from-release).
    let lacking = ImageReport::release_image_missing(
        "quay.io/ocp/release:4.18.0-multi#csi-livenessprobe",
        "release 4.18.0 has no component 'csi-livenessprobe'".into(),
        Origin::Release {
            release: "quay.io/ocp/release:4.18.0-multi".into(),
            release_digest: format!("sha256:{}", "0".repeat(64)),
            version: Some("4.18.0".into()),
            tag: "csi-livenessprobe".into(),
        },
    );
    let absent_component = row(
        "a release lacking a component",
        Verdict::Fail,
        &[Rule::ReleaseImageMissing],
        &[],
    );
    covered.extend(check(absent_component.layout, &lacking, &absent_component));

    // `--deep` results no layout holds: a PE program importing a DLL the image lacks, and
    // entries labelled with different source revisions.
    let mut g = graph("good", true).await;
    deep_program_with_a_missing_dll_and_skewed_labels(&mut g);
    let skewed = row(
        "good, a program lacking a DLL, skewed labels",
        Verdict::Fail,
        &[Rule::DllMissing, Rule::SourceSkew],
        &[],
    );
    covered.extend(check(skewed.layout, &judge_default(&g), &skewed));
    let mut g = graph("good", true).await;
    deep_program_built_for_linux(&mut g);
    let elf = row(
        "good, a Linux ELF as the Windows entries' program",
        Verdict::Fail,
        &[Rule::BinaryPlatformMismatch, Rule::NoSourceRevision],
        &[],
    );
    covered.extend(check(elf.layout, &judge_default(&g), &elf));

    // The signature rules judge what a registry holds next to the image, not its graph:
    // tests/signatures.rs and tests/signature_policy.rs cover them against a registry. `driver-skew`
    // judges two images together (a driver's Linux and Windows halves), never one graph: tests/driver.rs.
    covered.extend([
        Rule::SignatureMissing,
        Rule::SignatureInvalid,
        Rule::AttestationMissing,
        Rule::DriverSkew,
        Rule::SignatureRejected,
        Rule::SignatureNotPredicted,
    ]);
    // The CSI Proxy rules need a Go driver built against a csi-proxy client: tests/csiproxy.rs
    // builds them and covers both.
    covered.extend([Rule::CsiProxyIncompatible, Rule::CsiProxyUnknown]);
    let verify_rules: BTreeSet<Rule> = Rule::ALL.into_iter().filter(|r| !r.is_mirror()).collect();
    let missing: Vec<&Rule> = verify_rules.difference(&covered).collect();
    assert!(
        missing.is_empty(),
        "verify rules no row covers: {missing:?}"
    );
}

#[test]
fn every_fixture_layout_has_a_row() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/layouts");
    let layouts: BTreeSet<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let rows: BTreeSet<String> = ROWS.iter().map(|r| r.layout.to_string()).collect();
    assert_eq!(layouts, rows);
}

/// Issue 12: a Linux host row per runtime of `linux.runtimes`; on a gzip/zstd pair CRI-O
/// (containers/image `chooseInstance`) takes the zstd instance, containerd the first listed.
#[tokio::test]
async fn linux_rows_follow_each_runtime() {
    let policy = Policy::parse(
        "name: t\nlinux:\n  architectures: [amd64]\n  runtimes: [cri-o, containerd-2.3]\n",
        "test",
    )
    .unwrap();
    let g = graph("zstd-pair", false).await;
    let report = judge(&g, &policy, &policy.runtimes);
    let digests: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/digests.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let children = &digests["zstd-pair"]["children"];
    let rows: Vec<(String, Option<String>)> = report
        .hosts
        .iter()
        .map(|h| (h.runtime.unwrap().to_string(), h.selected.clone()))
        .collect();
    let child = |k: &str| children[k].as_str().map(ToString::to_string);
    assert_eq!(
        rows,
        [
            ("cri-o".to_string(), child("linux/amd64#2")),
            ("containerd-2.3".to_string(), child("linux/amd64")),
        ]
    );
    assert!(report.hosts.iter().all(|h| h.isolation.is_none()));
    assert_eq!(report.verdict, Verdict::Pass, "{:#?}", report.findings);
}
