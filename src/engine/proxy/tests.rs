//! The CSI Proxy table and the judgement, on hand-made `--deep` results. Each row of the
//! table cites kubernetes-csi/csi-proxy's `CHANGELOG/CHANGELOG-<release>.md` (the `source`
//! of each [`RELEASES`] row); docs/images.md repeats them.

use super::*;
use crate::binary::{BinaryInfo, GoBuildInfo};
use crate::digest::Digest;
use crate::engine::severity::Severity;
use crate::graph::{Content, EntryCheck, Program};
use crate::manifest::{ImageConfig, Index, Manifest};

fn v(s: &str) -> ModuleVersion {
    ModuleVersion::parse(s).unwrap_or_else(|| panic!("{s}"))
}

/// Rows: (release, a group version it serves, one it does not serve, source). What a release
/// serves is every group version its changelog and those before it add.
#[test]
fn what_each_release_serves() {
    let rows = [
        (
            "v0.1.0",
            "smb/v1alpha1",
            "disk/v1beta1",
            "CHANGELOG-0.2.0.md",
        ),
        (
            "v0.2.0",
            "disk/v1beta1",
            "smb/v1beta1",
            "CHANGELOG-0.2.0.md",
        ),
        (
            "v0.2.1",
            "smb/v1beta1",
            "system/v1alpha1",
            "CHANGELOG-0.2.1.md",
        ),
        ("v0.2.2", "iscsi/v1alpha1", "disk/v1", "CHANGELOG-0.2.2.md"),
        (
            "v1.0.0-rc1",
            "disk/v1",
            "filesystem/v2alpha1",
            "CHANGELOG-1.0.0-rc1.md",
        ),
        ("v1.0.0", "smb/v1", "volume/v2alpha1", "CHANGELOG-1.0.0.md"),
        (
            "v1.0.2",
            "filesystem/v1",
            "filesystem/v2alpha1",
            "CHANGELOG-1.0.2.md",
        ),
        (
            "v1.1.0",
            "filesystem/v2alpha1",
            "disk/v2alpha1",
            "CHANGELOG-1.1.0.md",
        ),
        (
            "v1.2.1",
            "volume/v2alpha1",
            "smb/v2alpha1",
            "CHANGELOG-1.2.1.md",
        ),
        ("v1.4.0", "disk/v1alpha1", "disk/v3", "CHANGELOG-1.4.0.md"),
    ];
    for (release, serves, not, source) in rows {
        let Served::Exactly(s) = served(&v(release)) else {
            panic!("{release} ({source}) is placed")
        };
        assert!(s.contains(serves), "{release} serves {serves} ({source})");
        assert!(
            !s.contains(not),
            "{release} does not serve {not} ({source})"
        );
    }
    assert!(matches!(served(&v("v1.5.0")), Served::AtLeast(s) if s.contains("volume/v2alpha1")));
    for unplaced in [
        "v0.0.9",
        "v1.1.3-0.20230101000000-abcdef123456",
        "v1.0.0-rc2",
        "v2.0.0",
    ] {
        assert_eq!(served(&v(unplaced)), Served::Unknown, "{unplaced}");
    }
    for w in RELEASES.windows(2) {
        assert!(
            v(w[0].version) < v(w[1].version),
            "{} before {}",
            w[0].version,
            w[1].version
        );
    }
}

fn windows_config() -> ImageConfig {
    ImageConfig::parse(br#"{"os":"windows","architecture":"amd64","os.version":"10.0.17763.1"}"#)
        .unwrap()
}

/// A Go driver built with `client` (`path version`, with a directory replacement when
/// `replaced`) embedding `apis`; `main` is its main module.
fn driver(main: &str, client: Option<(&str, &str)>, apis: &[&str]) -> BinaryInfo {
    let mut info = BinaryInfo::pe_amd64_console(&[]);
    info.go = Some(GoBuildInfo {
        main_module: Some(main.into()),
        deps: client
            .map(|(path, version)| crate::binary::GoModule {
                path: path.into(),
                version: version.into(),
                replace: Some(Box::new(crate::binary::GoModule {
                    path: "../stub".into(),
                    version: "(devel)".into(),
                    replace: None,
                })),
            })
            .into_iter()
            .collect(),
        csi_proxy_apis: apis.iter().map(ToString::to_string).collect(),
        ..GoBuildInfo::default()
    });
    info
}

fn graph(binary: BinaryInfo) -> Graph {
    let manifest = match Manifest::parse(
        br#"{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855","size":0},"layers":[]}"#,
        None,
    ) {
        Ok(Manifest::Image(m)) => m,
        other => panic!("{other:?}"),
    };
    let child = Node {
        digest: Digest::sha256(b"win"),
        media_type: String::new(),
        served: None,
        content: Content::Image(Box::new(Image {
            manifest,
            config: Ok(windows_config()),
            layers: vec![],
            entry: Some(EntryCheck {
                command: vec!["driver.exe".into()],
                programs: vec![Program {
                    name: "driver.exe".into(),
                    looked_up: vec!["C:\\driver.exe".into()],
                    outcome: LookupOutcome::Found {
                        path: "C:\\driver.exe".into(),
                        binary: Box::new(binary),
                        dlls: None,
                    },
                }],
            }),
        })),
    };
    let index: Index = match Manifest::parse(
        br#"{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[]}"#,
        None,
    ) {
        Ok(Manifest::Index(i)) => i,
        other => panic!("{other:?}"),
    };
    Graph {
        reference: "r".into(),
        root: Node {
            digest: Digest::sha256(b"root"),
            media_type: String::new(),
            served: None,
            content: Content::Index {
                index,
                children: vec![Some(child)],
            },
        },
    }
}

fn policy(csi_proxy: &str) -> Policy {
    Policy::parse(
        &format!("name: t\nwindows:\n  architectures: [amd64]\n  builds: [17763]\n{csi_proxy}"),
        "t",
    )
    .unwrap()
}

const CLIENT: &str = "github.com/kubernetes-csi/csi-proxy/client";

/// A row: what, the driver, the policy's csi_proxy section, the image's names, the findings
/// (rule and a part of the message).
type Row<'a> = (
    &'a str,
    BinaryInfo,
    String,
    Vec<String>,
    Vec<(Rule, &'a str)>,
);

fn v1() -> BinaryInfo {
    driver(
        "example.com/d",
        Some((CLIENT, "v1.0.0")),
        &["disk/v1", "smb/v1"],
    )
}

fn v2alpha() -> BinaryInfo {
    driver(
        "example.com/d",
        Some((CLIENT, "v1.1.0")),
        &["filesystem/v2alpha1", "smb/v1"],
    )
}

/// The policy's `windows.csi_proxy` naming the nodes' release.
fn at(version: &str) -> String {
    format!("  csi_proxy:\n    version: {version}\n")
}

/// Judges each row's driver under its policy; checks the findings' rules, messages,
/// severities and digests.
fn check(rows: Vec<Row<'_>>) {
    for (what, binary, section, names, want) in rows {
        let found = judge_csi_proxy(&graph(binary), &policy(&section), &names);
        assert_eq!(found.len(), want.len(), "{what}: {found:#?}");
        for (f, (rule, part)) in found.iter().zip(&want) {
            assert_eq!(f.rule, *rule, "{what}: {f:?}");
            assert!(f.message.contains(part), "{what}: {}", f.message);
            let severity = match rule {
                Rule::CsiProxyUnknown => Severity::Warning,
                _ => Severity::Error,
            };
            assert_eq!(f.severity, severity, "{what}");
            assert!(f.digest.is_some(), "{what}");
        }
    }
}

/// Group versions the nodes' proxy serves, or not.
#[test]
fn served_and_unserved_groups() {
    check(vec![
        ("v1 groups on v1.0.2", v1(), at("v1.0.2"), vec![], vec![]),
        (
            "v1 groups on v0.2.2",
            v1(),
            at("v0.2.2"),
            vec![],
            vec![(
                Rule::CsiProxyIncompatible,
                "the nodes' CSI Proxy v0.2.2 (policy windows.csi_proxy.version) serves disk \
                 v1alpha1, v1beta1, v1beta2; smb v1alpha1, v1beta1, but none of disk/v1, smb/v1",
            )],
        ),
        (
            "v2alpha1 on v1.0.2",
            v2alpha(),
            at("v1.0.2"),
            vec![],
            vec![(
                Rule::CsiProxyIncompatible,
                "but none of filesystem/v2alpha1",
            )],
        ),
        (
            "v2alpha1 on v1.1.0",
            v2alpha(),
            at("v1.1.0"),
            vec![],
            vec![],
        ),
    ]);
}

/// What cannot be told: `csi-proxy-unknown`.
#[test]
fn what_cannot_be_told() {
    check(vec![
        (
            "no version known",
            v1(),
            String::new(),
            vec![],
            vec![(
                Rule::CsiProxyUnknown,
                "the CSI Proxy release the Windows nodes run is not known",
            )],
        ),
        (
            "a pseudo-version",
            v1(),
            at("v1.1.3-0.20230101000000-abcdef123456"),
            vec![],
            vec![(
                Rule::CsiProxyUnknown,
                "is not a release the CSI Proxy table places",
            )],
        ),
        (
            "a group version the table lacks",
            driver("example.com/d", Some((CLIENT, "v1.3.0")), &["disk/v3"]),
            at("v1.4.0"),
            vec![],
            vec![(
                Rule::CsiProxyUnknown,
                "serves disk v1alpha1, v1beta1, v1beta2, v1beta3, v1, and whether it serves \
                 disk/v3 cannot be told",
            )],
        ),
        (
            "one version of a group served is enough",
            driver(
                "example.com/d",
                Some((CLIENT, "v1.1.0")),
                &["disk/v1", "disk/v1beta2"],
            ),
            at("v0.2.2"),
            vec![],
            vec![],
        ),
        (
            "newer than the table, a group version it lacks",
            driver("example.com/d", Some((CLIENT, "v1.5.0")), &["disk/v3"]),
            at("v1.5.0"),
            vec![],
            vec![(Rule::CsiProxyUnknown, "serves at least disk v1alpha1")],
        ),
        (
            "no package found, client no newer than the proxy",
            driver("example.com/d", Some((CLIENT, "v1.0.0")), &[]),
            at("v1.1.0"),
            vec![],
            vec![],
        ),
        (
            "no package found, client newer than the proxy",
            driver("example.com/d", Some((CLIENT, "v1.1.0")), &[]),
            at("v1.0.0"),
            vec![],
            vec![(
                Rule::CsiProxyUnknown,
                "which API groups it dials cannot be told",
            )],
        ),
    ]);
}

/// The proxy itself and programs that are no client judge nothing; the driver's minimum.
#[test]
fn minimum_and_non_clients() {
    check(vec![
        (
            "the proxy itself",
            driver(crate::binary::PROXY_MODULE, None, &["disk/v1"]),
            at("v0.1.0"),
            vec![],
            vec![],
        ),
        (
            "not a client",
            driver("example.com/d", None, &[]),
            String::new(),
            vec![],
            vec![],
        ),
        (
            "below the driver's minimum",
            v1(),
            format!(
                "{}    minimum: {{azure-file-csi-driver: v1.1.0}}\n",
                at("v1.0.2")
            ),
            vec!["azure-file-csi-driver".into()],
            vec![(
                Rule::CsiProxyIncompatible,
                "azure-file-csi-driver needs CSI Proxy v1.1.0 or later (policy \
                 windows.csi_proxy.minimum); the nodes run v1.0.2",
            )],
        ),
        (
            "a minimum for another driver",
            v1(),
            format!(
                "{}    minimum: {{vsphere-csi-driver: v1.1.0}}\n",
                at("v1.0.2")
            ),
            vec!["azure-file-csi-driver".into()],
            vec![],
        ),
    ]);
}

/// A policy without Windows hosts judges no CSI Proxy.
#[test]
fn linux_only_policies_judge_nothing() {
    let p = Policy::parse("name: t\nlinux:\n  architectures: [amd64]\n", "t").unwrap();
    let g = graph(driver(
        "example.com/d",
        Some((CLIENT, "v1.0.0")),
        &["disk/v1"],
    ));
    assert_eq!(judge_csi_proxy(&g, &p, &[]), vec![]);
}
