//! Issue 20, item 5: one row per oc-mirror v2 copy rule, each naming the oc-mirror file and
//! function it follows. The graph is `fixtures/layouts/good` (linux/amd64, windows/amd64
//! 10.0.17763, windows/amd64 10.0.20348).

use super::*;
use crate::mirror::testing::{fixture, ids};

fn imageset(platforms: &[&str], repo: Option<&str>, tag: Option<&str>) -> Origin {
    Origin::Imageset {
        path: "isc.yaml".into(),
        entry: "mirror.additionalImages[0]".into(),
        platforms: platforms.iter().map(|p| p.to_string()).collect(),
        target_repo: repo.map(String::from),
        target_tag: tag.map(String::from),
    }
}

/// One row: the oc-mirror rule and its source, the origin, the reference, the policy, the
/// findings expected and a text the first must hold.
type Row<'a> = (
    &'a str,
    Origin,
    &'a ImageRef,
    &'a Policy,
    &'a [&'a str],
    &'a str,
);

fn check_rows(graph: &Graph, rows: Vec<Row>) {
    for (rule, origin, reference, policy, want, text) in rows {
        let found = predict(graph, reference, policy, std::slice::from_ref(&origin));
        assert_eq!(ids(&found), want, "{rule}");
        if let Some(first) = found.first() {
            assert!(first.message.contains(text), "{rule}: {}", first.message);
        }
    }
}

#[tokio::test]
async fn the_platforms_filter_decides_which_entries_are_copied() {
    let graph = fixture("good").await;
    let windows = Policy::default_policy();
    let linux = Policy::load("linux-only").unwrap();
    let tagged: ImageRef = "quay.io/org/csi-driver:v1".parse().unwrap();
    let rows: Vec<Row> = vec![
        (
            "type_config.go AdditionalImage.Platforms / type_internal.go CopyImageSchema.Platforms: \
             empty copies every platform",
            imageset(&[], None, None),
            &tagged,
            &windows,
            &[],
            "",
        ),
        (
            "type_platform.go InstancePlatformFilter: only the listed os/architecture are copied",
            imageset(&["linux/amd64"], None, None),
            &tagged,
            &windows,
            &["mirror-platform-dropped"],
            "mirror.additionalImages[0].platforms in isc.yaml",
        ),
        (
            "type_platform.go InstancePlatformFilter has no os.version: windows/amd64 keeps every build",
            imageset(&["linux/amd64", "windows/amd64"], None, None),
            &tagged,
            &windows,
            &[],
            "",
        ),
        (
            "InstancePlatformFilter: windows/arm64 does not keep windows/amd64 entries",
            imageset(&["linux/amd64", "windows/arm64"], None, None),
            &tagged,
            &windows,
            &["mirror-platform-dropped"],
            "windows/amd64 10.0.17763",
        ),
        (
            "InstancePlatformFilter keeps only what it lists, Linux included: windows/amd64 \
             alone leaves linux/amd64 out",
            imageset(&["windows/amd64"], None, None),
            &tagged,
            &windows,
            &["mirror-platform-dropped"],
            "add {os: linux, architecture: amd64} to the filter",
        ),
        (
            "a Linux-only policy needs linux/amd64: a Windows-only filter drops what it needs",
            imageset(&["windows/amd64"], None, None),
            &tagged,
            &linux,
            &["mirror-platform-dropped"],
            "its entries linux/amd64 will be left out",
        ),
        (
            "no Windows host in scope: the Windows entries are nobody's loss",
            imageset(&["linux/amd64"], None, None),
            &tagged,
            &linux,
            &[],
            "",
        ),
        (
            "a reference typed or listed, not from an ImageSetConfiguration: nothing to predict",
            Origin::Sandbox {
                key: "windows.sandbox_image".into(),
            },
            &tagged,
            &windows,
            &[],
            "",
        ),
    ];
    check_rows(&graph, rows);
}

#[tokio::test]
async fn target_repo_and_tag_decide_where_it_lands() {
    let graph = fixture("good").await;
    let windows = Policy::default_policy();
    let linux = Policy::load("linux-only").unwrap();
    let tagged: ImageRef = "quay.io/org/csi-driver:v1".parse().unwrap();
    let pinned: ImageRef = format!("quay.io/org/csi-driver@{}", graph.root.digest)
        .parse()
        .unwrap();
    let rows: Vec<Row> = vec![
        (
            "local_stored_collector.go AdditionalImagesCollector: targetRepo replaces the path",
            imageset(&[], Some("mirrored/csi"), None),
            &tagged,
            &windows,
            &["mirror-target-moved"],
            "mirror.additionalImages[0].targetRepo in isc.yaml",
        ),
        (
            "AdditionalImagesCollector: a targetRepo ending with the source path keeps it",
            imageset(&[], Some("ocp4/org/csi-driver"), None),
            &tagged,
            &windows,
            &[],
            "",
        ),
        (
            "targetRepo is only a Windows (WMCO, per registry host) problem",
            imageset(&[], Some("mirrored/csi"), None),
            &tagged,
            &linux,
            &[],
            "",
        ),
        (
            "AdditionalImagesCollector: targetTag replaces the tag a pull by tag asks for",
            imageset(&[], None, Some("v1-mirrored")),
            &tagged,
            &linux,
            &["mirror-target-moved"],
            "':v1-mirrored'",
        ),
        (
            "targetTag: a pull by digest does not read the tag",
            imageset(&[], None, Some("v1-mirrored")),
            &pinned,
            &windows,
            &[],
            "",
        ),
    ];
    check_rows(&graph, rows);
}

#[tokio::test]
async fn a_dropped_windows_entry_fails_the_pre_check() {
    let graph = fixture("good").await;
    let policy = Policy::default_policy();
    let reference: ImageRef = "quay.io/org/csi-driver:v1".parse().unwrap();
    let mut report = crate::engine::judge(&graph, &policy, &policy.runtimes);
    assert_eq!(report.verdict, crate::engine::Verdict::Pass);
    judge_copy(
        &mut report,
        &graph,
        &reference,
        &policy,
        &[imageset(&["linux/amd64"], None, None)],
    );
    assert_eq!(report.verdict, crate::engine::Verdict::Fail);
    assert_eq!(report.findings[0].rule, Rule::MirrorPlatformDropped);
    assert!(
        report.findings[0]
            .message
            .contains("{os: windows, architecture: amd64}"),
        "{}",
        report.findings[0].message
    );
}
