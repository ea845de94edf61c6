use super::*;
use crate::assemble::parse_annotations;
use crate::error::one_line;

fn config(json: &str) -> ImageConfig {
    ImageConfig::parse(json.as_bytes()).unwrap()
}

fn child(name: &str, cfg: &str) -> ChildImage {
    ChildImage {
        origin: name.to_string(),
        digest: Digest::sha256(name.as_bytes()),
        media_type: OCI_MANIFEST.to_string(),
        size: 400,
        config: config(cfg),
        os_version: None,
        listed: None,
    }
}

const LINUX_AMD64: &str = r#"{"os":"linux","architecture":"amd64"}"#;
const LINUX_ARM64: &str = r#"{"os":"linux","architecture":"arm64","variant":"v8"}"#;
const LINUX_ARM: &str = r#"{"os":"linux","architecture":"arm","variant":"v7"}"#;
const WIN_17763: &str = r#"{"os":"windows","architecture":"amd64","os.version":"10.0.17763.5830"}"#;
const WIN_20348: &str = r#"{"os":"windows","architecture":"amd64","os.version":"10.0.20348.2461"}"#;
const WIN_26100: &str = r#"{"os":"windows","architecture":"amd64","os.version":"10.0.26100.1742"}"#;
const WIN_NONE: &str = r#"{"os":"windows","architecture":"amd64"}"#;

fn four() -> Vec<ChildImage> {
    vec![
        child("w17763", WIN_17763),
        child("amd64", LINUX_AMD64),
        child("w20348", WIN_20348),
        child("arm64", LINUX_ARM64),
    ]
}

fn order(index: &AssembledIndex) -> Vec<String> {
    index
        .entries
        .iter()
        .map(|d| d.platform.as_ref().unwrap().to_string())
        .collect()
}

/// Children as (name, config) and the platforms expected, in list order.
type OrderCase<'a> = (&'a [(&'a str, &'a str)], &'a [&'a str]);

#[test]
fn platforms_come_from_configs_in_a_fixed_order() {
    let cases: &[OrderCase] = &[
        (
            &[
                ("w17763", WIN_17763),
                ("amd64", LINUX_AMD64),
                ("w20348", WIN_20348),
                ("arm64", LINUX_ARM64),
            ],
            &[
                "linux/amd64",
                "linux/arm64",
                "windows/amd64:10.0.20348.2461",
                "windows/amd64:10.0.17763.5830",
            ],
        ),
        (
            &[
                ("w26100", WIN_26100),
                ("arm", LINUX_ARM),
                ("w17763", WIN_17763),
                ("w20348", WIN_20348),
                ("s390x", r#"{"os":"linux","architecture":"s390x"}"#),
                ("freebsd", r#"{"os":"freebsd","architecture":"amd64"}"#),
                (
                    "warm",
                    r#"{"os":"windows","architecture":"arm64","os.version":"10.0.20348.2461"}"#,
                ),
            ],
            &[
                "linux/arm/v7",
                "linux/s390x",
                "freebsd/amd64",
                "windows/amd64:10.0.26100.1742",
                "windows/amd64:10.0.20348.2461",
                "windows/arm64:10.0.20348.2461",
                "windows/amd64:10.0.17763.5830",
            ],
        ),
    ];
    for (inputs, want) in cases {
        let children: Vec<_> = inputs.iter().map(|(n, c)| child(n, c)).collect();
        let index = build_index(&children, None, &BTreeMap::new(), Isolation::Process).unwrap();
        assert_eq!(order(&index), *want);
    }
}

#[test]
fn same_inputs_in_any_order_give_the_same_digest() {
    let mut children = four();
    let first = build_index(&children, None, &BTreeMap::new(), Isolation::Process).unwrap();
    for rotation in 1..children.len() {
        children.rotate_left(1);
        let again = build_index(&children, None, &BTreeMap::new(), Isolation::Process).unwrap();
        assert_eq!(again.digest, first.digest, "rotation {rotation}");
        assert_eq!(again.bytes, first.bytes);
    }
    assert_eq!(first.digest, Digest::sha256(&first.bytes));
    assert!(first.bytes.ends_with(b"}\n"));
}

#[test]
fn writes_every_platform_field_and_nothing_else() {
    let mut c = child(
        "w",
        r#"{"os":"windows","architecture":"amd64","os.version":"10.0.17763.5830","os.features":["win32k"],"created":"2024-01-01T00:00:00Z"}"#,
    );
    c.media_type = DOCKER_MANIFEST.to_string();
    let ann = parse_annotations(&["org.opencontainers.image.source=https://x".into()]).unwrap();
    let index = build_index(
        &[c.clone()],
        Some(IndexFormat::Oci),
        &ann,
        Isolation::Process,
    )
    .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&index.bytes).unwrap();
    assert_eq!(
        v,
        serde_json::json!({
            "schemaVersion": 2,
            "mediaType": OCI_INDEX,
            "manifests": [{
                "mediaType": DOCKER_MANIFEST,
                "digest": c.digest.to_string(),
                "size": 400,
                "platform": {
                    "os": "windows",
                    "architecture": "amd64",
                    "os.version": "10.0.17763.5830",
                    "os.features": ["win32k"]
                }
            }],
            "annotations": {"org.opencontainers.image.source": "https://x"}
        })
    );
    let text = String::from_utf8(index.bytes).unwrap();
    assert!(!text.contains("2024"), "no timestamps: {text}");
}

#[test]
fn format_follows_children_unless_given() {
    let mut docker = four();
    for c in &mut docker {
        c.media_type = DOCKER_MANIFEST.to_string();
    }
    let none = BTreeMap::new();
    type FormatCase<'a> = (
        &'a [ChildImage],
        Option<IndexFormat>,
        Result<IndexFormat, &'a str>,
    );
    let cases: &[FormatCase] = &[
        (&docker, None, Ok(IndexFormat::Docker)),
        (&docker, Some(IndexFormat::Oci), Ok(IndexFormat::Oci)),
        (&four(), None, Ok(IndexFormat::Oci)),
        (
            &four(),
            Some(IndexFormat::Docker),
            Err("may only reference Docker schema2"),
        ),
    ];
    for (children, format, want) in cases {
        match (
            build_index(children, *format, &none, Isolation::Process),
            want,
        ) {
            (Ok(index), Ok(f)) => {
                assert_eq!(index.format, *f);
                let v: serde_json::Value = serde_json::from_slice(&index.bytes).unwrap();
                assert_eq!(v["mediaType"], f.media_type());
            }
            (Err(e), Err(w)) => assert!(one_line(&e).contains(w), "{e}"),
            (got, want) => panic!("{format:?}: got {got:?}, want {want:?}"),
        }
    }
    let mut mixed = docker.clone();
    mixed[0].media_type = OCI_MANIFEST.to_string();
    let err =
        build_index(&mixed, Some(IndexFormat::Docker), &none, Isolation::Process).unwrap_err();
    assert!(
        one_line(&err).contains("child w17763 is an OCI image manifest"),
        "{err}"
    );
    assert_eq!(
        build_index(&mixed, None, &none, Isolation::Process)
            .unwrap()
            .format,
        IndexFormat::Oci
    );
    let ann = parse_annotations(&["a=b".into()]).unwrap();
    let err = build_index(&docker, None, &ann, Isolation::Process).unwrap_err();
    assert!(one_line(&err).contains("no annotations"), "{err}");
}

/// A Windows amd64 config with `os.version` `version` and, optionally, os.features.
fn win(version: &str, features: &str) -> String {
    let features = match features {
        "" => String::new(),
        f => format!(r#","os.features":["{f}"]"#),
    };
    format!(r#"{{"os":"windows","architecture":"amd64","os.version":"{version}"{features}}}"#)
}

/// A child with one field changed.
fn changed(name: &str, cfg: &str, change: impl FnOnce(&mut ChildImage)) -> ChildImage {
    let mut c = child(name, cfg);
    change(&mut c);
    c
}

/// Each set of children is refused with a message containing the text given.
fn assert_refused(cases: Vec<(Vec<ChildImage>, &str)>) {
    for (children, want) in cases {
        let err = build_index(&children, None, &BTreeMap::new(), Isolation::Process).unwrap_err();
        assert!(one_line(&err).contains(want), "want '{want}', got '{err}'");
    }
}

#[test]
fn a_hostprocess_list_takes_windows_children_without_os_version() {
    let children = [child("hp", WIN_NONE), child("l", LINUX_AMD64)];
    let index = build_index(&children, None, &BTreeMap::new(), Isolation::Hostprocess)
        .expect("HostProcess children need no os.version");
    let windows = index
        .entries
        .iter()
        .find_map(|e| e.platform.as_ref().filter(|p| p.is_windows()))
        .expect("a windows entry");
    assert_eq!(windows.os_version, None);
    // Under process isolation the same child is refused (see the refusal table).
    assert!(build_index(&children, None, &BTreeMap::new(), Isolation::Process).is_err());
}

#[test]
fn refusals_name_the_child_and_the_problem() {
    assert_refused(vec![
        (vec![], "no child images"),
        (
            vec![child("nover", WIN_NONE)],
            "child nover is a Windows image whose config has no os.version",
        ),
        // Issue 21, item 5: the refusal names the policy that takes a HostProcess child.
        (
            vec![child("hp", WIN_NONE)],
            "a HostProcess image (no os.version by design) is assembled with --policy \
             openshift-hostprocess",
        ),
        (
            vec![child("badver", &win("10.0", ""))],
            "os.version '10.0' is not MAJOR.MINOR.BUILD",
        ),
        (
            vec![child("a", WIN_17763), child("b", WIN_17763)],
            "children a and b are both windows/amd64:10.0.17763.5830",
        ),
        // Same build, different revision: the same hosts select both.
        (
            vec![child("a", WIN_20348), child("b", &win("10.0.20348.9", ""))],
            "children a and b are both",
        ),
        // x86_64 normalises to amd64; win32k is ignored by containerd.
        (
            vec![
                child("a", LINUX_AMD64),
                child("b", r#"{"os":"linux","architecture":"x86_64"}"#),
            ],
            "children a and b are both linux/amd64",
        ),
        (
            vec![
                child("a", WIN_17763),
                child("b", &win("10.0.17763.1", "win32k")),
            ],
            "children a and b are both",
        ),
    ]);
}

#[test]
fn refusals_of_a_given_os_version_or_index_entry_name_the_child() {
    let version = |v: &str| Some(v.to_string());
    assert_refused(vec![
        (
            vec![changed("linux", LINUX_AMD64, |c| {
                c.os_version = version("10.0.17763.1")
            })],
            "os.version only applies to Windows images",
        ),
        (
            vec![changed("w", WIN_17763, |c| {
                c.os_version = version("10.0.20348.1")
            })],
            "its config says os.version 10.0.17763.5830",
        ),
        (
            vec![changed("e", WIN_20348, |c| {
                c.listed =
                    Some(Platform::new("windows", "amd64").with_os_version("10.0.17763.5830"))
            })],
            "child e: the index it comes from says os.version 10.0.17763.5830 but the image config says 10.0.20348.2461",
        ),
        (
            vec![changed("e", LINUX_ARM64, |c| {
                c.listed = Some(Platform::new("linux", "amd64"))
            })],
            "says linux/amd64 but the image config says linux/arm64",
        ),
        (
            vec![changed("e", WIN_17763, |c| {
                c.listed = Some(Platform {
                    os_features: vec!["win32k".into()],
                    ..Platform::new("windows", "amd64")
                })
            })],
            "os.features [win32k] but the image config says []",
        ),
        (
            vec![changed("cfg", LINUX_AMD64, |c| {
                c.media_type = "application/vnd.oci.image.index.v1+json".into()
            })],
            "is not an OCI or Docker schema2 image manifest",
        ),
    ]);
}

#[test]
fn accepted_fills_and_matches() {
    let none = BTreeMap::new();
    // A given os.version fills a missing one; the same value as the config is accepted.
    for (cfg, given) in [
        (WIN_NONE, "10.0.20348.2227"),
        (WIN_20348, "10.0.20348.2461"),
    ] {
        let mut c = child("w", cfg);
        c.os_version = Some(given.to_string());
        let index = build_index(&[c], None, &none, Isolation::Process).unwrap();
        assert_eq!(
            index.entries[0]
                .platform
                .as_ref()
                .unwrap()
                .os_version
                .as_deref(),
            Some(given)
        );
    }
    // An index entry without os.version (buildah manifest add --all) is filled from the
    // config; a normalised spelling of the same platform is no conflict.
    for listed in [
        Platform::new("windows", "amd64"),
        Platform::new("windows", "x86_64").with_os_version("10.0.17763.1"),
    ] {
        let mut c = child("w", WIN_17763);
        c.listed = Some(listed);
        let index = build_index(&[c], None, &none, Isolation::Process).unwrap();
        assert_eq!(
            index.entries[0].platform.as_ref().unwrap().to_string(),
            "windows/amd64:10.0.17763.5830"
        );
    }
    // Different features are different platforms.
    let featured = child(
        "b",
        r#"{"os":"windows","architecture":"amd64","os.version":"10.0.17763.1","os.features":["hyperv"]}"#,
    );
    let index = build_index(
        &[child("a", WIN_17763), featured],
        None,
        &none,
        Isolation::Process,
    )
    .unwrap();
    assert_eq!(index.entries.len(), 2);
}
