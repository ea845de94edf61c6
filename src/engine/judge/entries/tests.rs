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
        // Issue 12: a win32k only the config lists is no disagreement (containerd sets
        // it aside); another feature only the config lists still is.
        (win(Some("10.0.17763.1")), feat.clone(), None),
        (
            win(Some("10.0.17763.1")),
            Platform {
                os_features: vec!["win32k".into(), "hyperv".into()],
                ..win(Some("10.0.17763.1"))
            },
            Some("os.features"),
        ),
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

const D: &str = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

fn entry(platform: Option<Platform>) -> Descriptor {
    Descriptor {
        media_type: crate::manifest::OCI_MANIFEST.into(),
        digest: D.into(),
        size: 1,
        platform,
        annotations: BTreeMap::new(),
        urls: vec![],
    }
}

#[test]
fn attestation_names_its_kind() {
    let mut annotated = entry(Some(Platform::new("unknown", "unknown")));
    let bare = annotated.clone();
    annotated.annotations.insert(
        ANNOTATION_REFERENCE_TYPE.into(),
        "attestation-manifest".into(),
    );
    let mut with_platform = annotated.clone();
    with_platform.platform = Some(Platform::new("windows", "amd64"));
    let mut platformless = annotated.clone();
    platformless.platform = None;
    for (d, kind, says) in [
        (annotated, "(attestation-manifest)", "never pulled"),
        (bare, "(unknown/unknown)", "never pulled"),
        (
            with_platform,
            "(attestation-manifest)",
            "windows/amd64: a node",
        ),
        (platformless, "(attestation-manifest)", "no platform"),
    ] {
        let f = attestation(&d);
        assert_eq!(f.rule, Rule::Attestation);
        assert_eq!(f.severity, crate::engine::severity::Severity::Info);
        assert!(f.message.contains(kind), "{}", f.message);
        assert!(f.message.contains(says), "{}", f.message);
        assert_eq!(f.hint == Rule::Attestation.hint(), says == "never pulled");
        assert_eq!(f.digest.as_deref(), Some(D));
    }
}

#[test]
fn os_version_missing_only_for_windows_entries_without_one() {
    let cfg = win(Some("10.0.17763.1"));
    let cases: &[(Platform, Option<&Platform>, Option<&str>)] = &[
        (
            win(None),
            Some(&cfg),
            Some(" (its config says 10.0.17763.1): it matches"),
        ),
        (
            win(None),
            None,
            Some("has no os.version: it matches every Windows host"),
        ),
        (win(Some("")), None, Some("has no os.version:")),
        (win(Some("10.0.17763.1")), Some(&cfg), None),
        (Platform::new("linux", "amd64"), None, None),
    ];
    for (p, cfg, want) in cases {
        let got = os_version_missing(&entry(Some(p.clone())), p, *cfg);
        assert_eq!(
            got.as_ref().map(|f| f.rule),
            want.map(|_| Rule::OsVersionMissing)
        );
        if let (Some(f), Some(w)) = (got, want) {
            assert!(f.message.contains(w), "{p}: {}", f.message);
        }
    }
}

/// Issue 12: a descriptor that states an os.version its config lacks is a warning
/// (under either isolation); a config that has one, or a Linux entry, is not.
#[test]
fn os_version_not_in_config() {
    let cases: &[(Platform, Platform, bool)] = &[
        (win(Some("10.0.17763.1")), win(None), true),
        (win(Some("10.0.17763.1")), win(Some("")), true),
        (win(Some("10.0.17763.1")), win(Some("10.0.17763.1")), false),
        (win(None), win(None), false),
        (win(Some("")), win(None), false),
        (
            Platform::new("linux", "amd64").with_os_version("x"),
            Platform::new("linux", "amd64"),
            false,
        ),
    ];
    for (p, cfg, want) in cases {
        let got = not_in_config(&entry(Some(p.clone())), p, cfg);
        assert_eq!(got.is_some(), *want, "{p} / {cfg}");
        if let Some(f) = got {
            assert_eq!(f.rule, Rule::OsVersionNotInConfig);
            assert_eq!(f.severity, crate::engine::Severity::Warning);
            assert!(
                f.message.contains("its image config has none"),
                "{}",
                f.message
            );
        }
    }
}

/// Issue 12: trailing junk in os.version (`10.0.17763.5329,`) no longer passes silently.
#[test]
fn malformed_os_versions_are_platform_mismatches() {
    let cases: &[(&str, Option<&str>)] = &[
        ("10.0.17763.5329,", Some("containerd reads 10.0.17763")),
        ("10.0.17763 ", Some("containerd reads 0.0.0")),
        ("ltsc2019", Some("0.0.0 (it matches no host)")),
        ("10.0.20348.2461.7", Some("containerd reads 10.0.20348")),
        ("10.0.17763.5329", None),
        ("10.0.17763", None),
    ];
    for (v, want) in cases {
        let p = win(Some(v));
        let got = malformed_version(&entry(Some(p.clone())), &p);
        assert_eq!(
            got.as_ref().map(|f| f.rule),
            want.map(|_| Rule::PlatformMismatch),
            "{v}"
        );
        if let (Some(f), Some(w)) = (got, want) {
            assert!(
                f.message.contains(w) && f.message.contains(v),
                "{}",
                f.message
            );
        }
    }
    let linux = Platform::new("linux", "amd64").with_os_version("junk,");
    assert!(malformed_version(&entry(Some(linux.clone())), &linux).is_none());
}

/// Issue 12: the gzip and zstd instances of one platform (`podman manifest push
/// --add-compression zstd`) are alternates, not duplicates; two zstd ones are.
#[test]
fn zstd_twins_are_alternates() {
    let zstd = |mut d: Descriptor| {
        d.annotations.insert(ANNOTATION_ZSTD.into(), "true".into());
        d
    };
    let p = Platform::new("linux", "amd64");
    let gzip = entry(Some(p.clone()));
    let (twin, third) = (zstd(entry(Some(p.clone()))), zstd(entry(Some(p))));
    let mut claims = Claims::default();
    assert!(claims.duplicate(&gzip, None).is_none());
    assert!(claims.duplicate(&twin, None).is_none());
    let again = claims.duplicate(&third, None);
    assert_eq!(again.map(|f| f.rule), Some(Rule::DuplicatePlatform));
}

#[test]
fn platform_mismatch_names_the_entry_and_the_disagreement() {
    let p = win(Some("10.0.17763.1"));
    let f = platform_mismatch(&entry(Some(p.clone())), &p, &win(Some("10.0.20348.1")));
    let f = f.expect("builds differ");
    assert_eq!(f.rule, Rule::PlatformMismatch);
    assert!(
        f.message
            .starts_with(&format!("entry {D}: the list says os.version"))
    );
    assert!(platform_mismatch(&entry(Some(p.clone())), &p, &p).is_none());
}

#[test]
fn duplicates_are_claims_of_the_same_normalised_platform() {
    let mut win32k = win(Some("10.0.17763.1"));
    win32k.os_features = vec!["win32k".into()];
    let cases: Vec<(Platform, Platform, bool)> = vec![
        (
            win(Some("10.0.17763.1")),
            win(Some("10.0.17763.5830")),
            true,
        ),
        (win(Some("10.0.17763.1")), win(Some("10.0.20348.1")), false),
        (win32k.clone(), win(Some("10.0.17763.1")), false),
        (win32k.clone(), win32k, true),
        (win(None), win(None), false),
        (
            Platform::new("linux", "amd64"),
            Platform::new("linux", "x86_64"),
            true,
        ),
        (
            Platform::new("linux", "arm64").with_variant("v8"),
            Platform::new("linux", "arm64"),
            true,
        ),
        (
            Platform::new("linux", "amd64"),
            Platform::new("linux", "arm64"),
            false,
        ),
    ];
    for (first, second, want) in cases {
        let (one, two) = (entry(Some(first.clone())), entry(Some(second.clone())));
        let mut claims = Claims::default();
        assert!(claims.duplicate(&one, first.windows_version()).is_none());
        let got = claims.duplicate(&two, second.windows_version());
        assert_eq!(
            got.as_ref().map(|f| f.rule),
            want.then_some(Rule::DuplicatePlatform),
            "{first} then {second}"
        );
        if let Some(f) = got {
            // Issue 12: each entry's own os.version, not the second one twice.
            let message = match (&first.os_version, &second.os_version) {
                (Some(a), Some(b)) => format!(
                    "entries {D} ({a}) and {D} ({b}) both claim {} build {}",
                    second.os_arch(),
                    second.windows_version().unwrap().build
                ),
                _ => format!("entries {D} and {D} both claim {}", second.os_arch()),
            };
            assert_eq!(f.message, message);
        }
    }
}

#[test]
fn unsupported_builds_are_windows_builds_outside_the_policy_no_host_selects() {
    let builds = [17763, 20348];
    let picked: BTreeSet<String> = [D.to_string()].into();
    let none = BTreeSet::new();
    let cases: &[(Platform, &BTreeSet<String>, bool)] = &[
        (win(Some("10.0.26100.1742")), &none, true),
        (win(Some("10.0.26100.1742")), &picked, false),
        (win(Some("10.0.20348.1")), &none, false),
        (win(None), &none, false),
        (Platform::new("linux", "amd64"), &none, false),
    ];
    for (p, selected, want) in cases {
        let d = entry(Some(p.clone()));
        let got = unsupported_build(&d, p, p.windows_version(), &builds, selected);
        assert_eq!(
            got.as_ref().map(|f| f.rule),
            want.then_some(Rule::UnsupportedBuild),
            "{p}"
        );
        if let Some(f) = got {
            assert!(
                f.message.contains("(10.0.26100.1742 (Windows Server 2025"),
                "{}",
                f.message
            );
        }
    }
}
