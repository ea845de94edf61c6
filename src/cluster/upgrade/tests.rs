use super::*;
use crate::platform::{Platform, WindowsVersion};

/// One version upgraded to, the profile the Windows nodes run after, and the WMCO source of
/// the row (openshift/windows-machine-config-operator).
struct Row {
    version: &'static str,
    wmco: Option<&'static str>,
    containerd: Option<&'static str>,
    profile: RuntimeProfile,
    source: &'static str,
}

#[test]
fn each_wmco_release_maps_to_the_containerd_its_makefile_builds() {
    let rows = [
        Row {
            version: "4.11.0",
            wmco: Some("6.0"),
            containerd: Some("1.6.24"),
            profile: RuntimeProfile::CONTAINERD_1_6,
            source: "Makefile at WMCO_VERSION 6.0.3 (commit 00571ee33f82): \
                     CONTAINERD_GIT_VERSION=v1.6.24-7-g38d6e91c9",
        },
        Row {
            version: "7.0.1",
            wmco: Some("7.0"),
            containerd: Some("1.6.24"),
            profile: RuntimeProfile::CONTAINERD_1_6,
            source: "PR #1839 [release-4.12]: Update containerd version to v1.6.24-7-gb93c35c9c",
        },
        Row {
            version: "4.13",
            wmco: Some("8.0"),
            containerd: Some("1.6.19"),
            // 1.6.19: the row of 1.6.18-1.6.22 (the no-os.version fallback, no LTSC window yet).
            profile: RuntimeProfile::CONTAINERD_1_6_18,
            source: "Makefile at WMCO_VERSION 8.0.1: CONTAINERD_GIT_VERSION=v1.6.19-4-gd594a39e7",
        },
        Row {
            version: "4.18.0",
            wmco: Some("10.18"),
            containerd: Some("1.7.x"),
            profile: RuntimeProfile::CONTAINERD_1_7,
            source: "PR #2428 (master, 2024-09-17): Update containerd version to v1.7.20",
        },
        Row {
            version: "10.19.1",
            wmco: Some("10.19"),
            containerd: Some("1.7.x"),
            profile: RuntimeProfile::CONTAINERD_1_7,
            source: ".claude/skills/containerd-fast-forward.md: the submodule follows v1.7.x",
        },
        Row {
            version: "4.21.0-0.nightly-2026-01-20-000000",
            wmco: Some("10.21"),
            containerd: Some("1.7.x"),
            profile: RuntimeProfile::CONTAINERD_1_7,
            source: ".claude/skills/containerd-fast-forward.md: the submodule follows v1.7.x",
        },
        Row {
            version: "containerd://2.1.4",
            wmco: None,
            containerd: Some("2.1.4"),
            profile: RuntimeProfile::CONTAINERD_2_0,
            source: "the runtime named: containerd's own release → profile mapping",
        },
        Row {
            version: "containerd-2.3",
            wmco: None,
            containerd: None,
            profile: RuntimeProfile::CONTAINERD_2_3,
            source: "the profile named",
        },
    ];
    for row in rows {
        let t = resolve_target(row.version, "--upgrade-to")
            .unwrap_or_else(|e| panic!("{} ({}): {e}", row.version, row.source));
        let case = format!("{} ({})", row.version, row.source);
        assert_eq!(t.profile, row.profile, "{case}");
        assert_eq!(t.wmco.as_deref(), row.wmco, "{case}");
        assert_eq!(t.containerd.as_deref(), row.containerd, "{case}");
    }
}

/// Issue 33: WMCO 10.15 built containerd v1.7.5 (`containerd-1.7.0`, no LTSC window) until
/// its PR #2160; an upgrade to 4.15 brings the newest z-stream, and a 1.7.5 is named as such.
#[test]
fn wmco_10_15_is_judged_as_its_newest_z_stream() {
    let rows = [
        Row {
            // An upgrade brings the newest 10.15 z-stream: PR #2160 (release-4.15, 2024-05-07)
            // moved it from v1.7.5 (`containerd-1.7.0`, before containerd#9069) to v1.7.16.
            version: "4.15",
            wmco: Some("10.15"),
            containerd: Some("1.7.x"),
            profile: RuntimeProfile::CONTAINERD_1_7,
            source: "PR #2160 [release-4.15]: Update containerd version to v1.7.16",
        },
        Row {
            version: "containerd://1.7.5",
            wmco: None,
            containerd: Some("1.7.5"),
            profile: RuntimeProfile::CONTAINERD_1_7_0,
            source: "WMCO 10.15 before PR #2160 (master PR #1755, v1.7.5): name the runtime",
        },
    ];
    for row in rows {
        let t = resolve_target(row.version, "--upgrade-to").unwrap();
        let case = format!("{} ({})", row.version, row.source);
        assert_eq!(t.profile, row.profile, "{case}");
        assert_eq!(t.wmco.as_deref(), row.wmco, "{case}");
        assert_eq!(t.containerd.as_deref(), row.containerd, "{case}");
    }
}

#[test]
fn the_table_is_ascending_and_every_row_names_its_source() {
    let minors: Vec<u32> = WMCO_CONTAINERD.iter().map(|r| r.ocp_minor).collect();
    assert!(minors.windows(2).all(|w| w[0] < w[1]), "{minors:?}");
    for r in WMCO_CONTAINERD {
        assert!(!r.source.is_empty(), "{r:?}");
        let wmco_major: u32 = r.wmco.split('.').next().unwrap().parse().unwrap();
        match r.ocp_minor >= FIRST_10_Y {
            true => assert_eq!(r.wmco, format!("10.{}", r.ocp_minor)),
            false => assert_eq!(wmco_major + 5, r.ocp_minor, "{r:?}"),
        }
    }
}

#[test]
fn a_version_no_source_covers_is_refused_naming_it() {
    let cases = [
        ("4.99", "not in imgcheck's table"),
        ("4.14.3", "no WMCO source was read"),
        ("4.10", "Docker Engine"),
        ("10.3", "does not exist"),
        ("four", "neither an OpenShift version"),
        ("", "neither an OpenShift version"),
        ("4.18.0.1.2", "neither an OpenShift version"),
        ("cri-o", "runs no Windows node"),
        ("containerd://banana", "has no version"),
    ];
    for (version, why) in cases {
        let e = resolve_target(version, "--upgrade-to").unwrap_err();
        assert!(e.contains(&format!("'{version}'")), "{version}: {e}");
        assert!(e.contains(why), "{version}: {e}");
    }
}

fn host(build: Option<u16>, runtime: RuntimeProfile, nodes: &[&str]) -> Host {
    let platform = match build {
        Some(b) => {
            Platform::new("windows", "amd64").with_os_version(&WindowsVersion::host(b).to_string())
        }
        None => Platform::new("linux", "amd64"),
    };
    Host {
        platform,
        runtime: Some(runtime),
        nodes: nodes.iter().map(ToString::to_string).collect(),
    }
}

#[test]
fn windows_rows_gain_the_profile_after_the_upgrade_linux_rows_stay() {
    let today = vec![
        host(None, RuntimeProfile::CRI_O, &["l1"]),
        host(Some(17763), RuntimeProfile::CONTAINERD_1_7, &["w1", "w2"]),
        host(Some(20348), RuntimeProfile::CONTAINERD_1_7, &["w3"]),
        host(Some(20348), RuntimeProfile::CONTAINERD_2_3, &["w4"]),
    ];
    let to = RuntimeProfile::CONTAINERD_2_3;
    let rows = upgraded_hosts(&today, to);
    let shown: Vec<(String, RuntimeProfile, Vec<String>)> = rows
        .iter()
        .map(|h| (h.label(), h.runtime.unwrap(), h.nodes.clone()))
        .collect();
    let row =
        |p: &str, r, n: &[&str]| (p.to_string(), r, n.iter().map(|s| s.to_string()).collect());
    assert_eq!(
        shown,
        vec![
            row("linux/amd64", RuntimeProfile::CRI_O, &["l1"]),
            row(
                "windows/amd64:10.0.17763",
                RuntimeProfile::CONTAINERD_1_7,
                &["w1", "w2"]
            ),
            row("windows/amd64:10.0.17763", to, &["w1", "w2"]),
            row(
                "windows/amd64:10.0.20348",
                RuntimeProfile::CONTAINERD_1_7,
                &["w3"]
            ),
            row("windows/amd64:10.0.20348", to, &["w3", "w4"]),
        ]
    );
    let reported = BTreeMap::from([("w1", "containerd://1.7.27"), ("w4", "containerd://2.3.0")]);
    let changes = profile_changes(&today, to, &reported);
    assert_eq!(changes.len(), 3);
    assert_eq!(
        changes[0].line(),
        "2 Windows nodes (w1, w2) on windows/amd64:10.0.17763: containerd://1.7.27 \
         (containerd-1.7 → containerd-2.3)"
    );
    assert_eq!(
        changes[2].line(),
        "1 Windows node (w4) on windows/amd64:10.0.20348: containerd://2.3.0 (containerd-2.3, \
         unchanged)"
    );
}
