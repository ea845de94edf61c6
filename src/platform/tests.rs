use super::*;
use proptest::prelude::*;

/// The normalised triple (containerd/platforms `database.go`, `normalizeArch`; see
/// docs/matching.md), borrowed from a lower-case platform, copied only when it must be
/// lower-cased.
#[test]
fn normal_triples_are_borrowed_when_lower_case() {
    // (os, architecture, variant, normalised triple, borrowed)
    let rows = [
        ("linux", "amd64", None, ("linux", "amd64", ""), true),
        ("linux", "x86_64", Some("v1"), ("linux", "amd64", ""), true),
        ("linux", "aarch64", Some("8"), ("linux", "arm64", ""), true),
        ("linux", "arm64", Some("v8"), ("linux", "arm64", ""), true),
        ("linux", "arm", Some("6"), ("linux", "arm", "v6"), true),
        ("linux", "armhf", None, ("linux", "arm", "v7"), true),
        ("linux", "i386", None, ("linux", "386", ""), true),
        ("windows", "amd64", None, ("windows", "amd64", ""), true),
        ("Windows", "AMD64", None, ("windows", "amd64", ""), false),
        ("linux", "ARM", Some("V7"), ("linux", "arm", "v7"), false),
        (
            "linux",
            "X86_64",
            Some("v3"),
            ("linux", "amd64", "v3"),
            false,
        ),
    ];
    for (os, arch, variant, want, borrowed) in rows {
        let mut p = Platform::new(os, arch);
        p.variant = variant.map(str::to_string);
        let (o, a, v) = p.normal();
        assert_eq!((&*o, &*a, &*v), want, "{p:?}");
        let all_borrowed = [&o, &a, &v].iter().all(|c| matches!(c, Cow::Borrowed(_)));
        assert_eq!(all_borrowed, borrowed, "{p:?}");
        let (o, a, v) = want;
        assert_eq!(p.normalized(), (o.into(), a.into(), v.into()), "{p:?}");
    }
}

fn pick(profile: RuntimeProfile, host: &Platform, list: &[Candidate]) -> Selection {
    select(profile, host, ListFormat::Oci, list)
}

fn win(v: &str) -> Platform {
    Platform::new("windows", "amd64").with_os_version(v)
}

fn host(build: u16) -> Platform {
    win(&format!("10.0.{build}"))
}

#[test]
fn parses_windows_versions_like_containerd() {
    type Fields = Option<(u8, u8, u16, u32)>;
    let cases: &[(&str, Fields)] = &[
        ("10.0.17763", Some((10, 0, 17763, 0))),
        ("10.0.17763.5830", Some((10, 0, 17763, 5830))),
        ("10.0.20348.2461.7", Some((10, 0, 20348, 2461))),
        ("10.0", None),
        ("", None),
        ("10.0.x", None),
        ("10.0.70000", None),  // build must fit in 16 bits
        ("300.0.17763", None), // major must fit in 8 bits
        ("10.0.17763.abc", Some((10, 0, 17763, 0))),
        ("10.0.+17763", None),
    ];
    for (s, want) in cases {
        let got = WindowsVersion::parse(s).map(|v| (v.major, v.minor, v.build, v.revision));
        assert_eq!(got, *want, "{s}");
    }
}

/// containerd/platforms `Test_PlatformCompat` (rs5 = 17763, v21H2Server = 20348,
/// v22H2Win11 = 22621), which holds for every profile.
#[test]
fn containerd_platform_compat_vectors() {
    let cases = [
        (17763, 17763, true),
        (17763, 20348, false),
        (20348, 17763, false),
        (20348, 20348, true),
        (22621, 17763, false),
        (22621, 20348, true),
    ];
    for profile in RuntimeProfile::CONTAINERD {
        for (h, c, want) in cases {
            let got = profile.compatible(WindowsVersion::host(h), WindowsVersion::host(c));
            assert_eq!(got, want, "{profile}: host {h} ctr {c}");
        }
    }
}

/// `docs/matching.md`: the compatibility window per profile.
#[test]
fn ltsc_window_per_profile() {
    // (host, ctr, [1.4, 1.5, 1.6.0, 1.6.18, 1.6, 1.7.0, 1.7, 2.0, 2.2, 2.3, next]): 1.4 and 1.5 at
    // start only (their pull reads no window), by the host's own check.
    let cases: &[(u16, u16, [bool; 11])] = &[
        (17763, 17763, [true; 11]),
        (17763, 17762, [false; 11]),
        (19041, 19041, [true; 11]),
        (19041, 17763, [false; 11]),
        (20348, 20348, [true; 11]),
        (20348, 22621, [false; 11]),
        (22621, 20348, [true; 11]),
        (22621, 22621, [true; 11]),
        (22621, 22631, [false; 11]),
        (25398, 20348, [true; 11]),
        (26100, 20348, [true; 11]),
        (26100, 26100, [true; 11]),
        (26100, 17763, [false; 11]),
        // Above 26100 the 2.2/2.3 floor moves to 26100 (moby/moby#53397); next goes one
        // LTSC back again.
        (
            26200,
            20348,
            [
                true, true, true, true, true, true, true, true, false, false, true,
            ],
        ),
        (26200, 26100, [true; 11]),
        (26200, 26200, [true; 11]),
        (26200, 26300, [false; 11]),
    ];
    for (h, c, want) in cases {
        assert_eq!(RuntimeProfile::CONTAINERD.len(), want.len());
        for (profile, want) in RuntimeProfile::CONTAINERD.iter().zip(want) {
            let got = profile.compatible(WindowsVersion::host(*h), WindowsVersion::host(*c));
            assert_eq!(got, *want, "{profile}: host {h} ctr {c}");
        }
    }
    // Major/minor must agree.
    let v = |s| WindowsVersion::parse(s).unwrap();
    assert!(!RuntimeProfile::CONTAINERD_2_3.compatible(v("10.0.20348"), v("6.3.20348")));
    assert!(!RuntimeProfile::CONTAINERD_2_3.compatible(v("10.1.20348"), v("10.0.20348")));
}

/// Issue 33, D: containerd 1.6.18 – 1.6.22 (`containerd-1.6.18`) between the 1.6.0 prefix
/// rule and the 1.6.23 LTSC window, each row citing the release that decides it.
#[test]
fn containerd_1_6_18_to_1_6_22_take_the_prefix_or_no_os_version() {
    let none = Platform::new("windows", "amd64");
    let (early, mid, late) = (
        RuntimeProfile::CONTAINERD_1_6_0,
        RuntimeProfile::CONTAINERD_1_6_18,
        RuntimeProfile::CONTAINERD_1_6,
    );
    // (source, host build, entry, [1.6.0 – 1.6.17, 1.6.18 – 1.6.22, 1.6.23 – 1.6.39])
    let cases = [
        (
            "v1.6.17 defaults_windows.go matchComparer.Match: strings.HasPrefix only; \
             v1.6.18 (containerd#8106): an entry without OSVersion matches first",
            17763,
            none.clone(),
            [false, true, true],
        ),
        (
            "v1.6.18 – v1.6.22 matchComparer.Match: the prefix, no stable-ABI window; \
             v1.6.23 (containerd#8854, releases/v1.6.23.toml): a WS2022 entry on a newer host",
            22621,
            win("10.0.20348.2461"),
            [false, false, true],
        ),
        (
            "every 1.6: the host's own build by prefix",
            20348,
            win("10.0.20348.2461"),
            [true, true, true],
        ),
    ];
    for (source, build, entry, want) in cases {
        let got = [early, mid, late].map(|p| matches(p, &host(build), &entry));
        assert_eq!(got, want, "{source}");
    }
}

/// Issue 33: containerd 1.7.0 – 1.7.5 (`containerd-1.7.0`) ran main's prefix matcher with the
/// fallback for entries without `os.version`; the LTSC window reached release/1.7 in 1.7.6.
/// Each row cites the change that decides it (docs/matching.md, "containerd 1.7.0 – 1.7.5").
#[test]
fn containerd_1_7_0_to_1_7_5_take_the_prefix_or_no_os_version() {
    let none = Platform::new("windows", "amd64");
    let (early, late) = (
        RuntimeProfile::CONTAINERD_1_7_0,
        RuntimeProfile::CONTAINERD_1_7,
    );
    // (source, host build, list, [1.7.0 – 1.7.5, 1.7.6+]): the entry each selects.
    let cases = [
        (
            "containerd#8101 (main before v1.7.0) windowsmatcher.Match: an entry without \
             OSVersion matches every host",
            17763,
            vec![none.clone()],
            [Some(0), Some(0)],
        ),
        (
            "containerd#8778's diff: before the window, the prefix; containerd#9069 \
             (releases/v1.7.6.toml): a WS2022 entry on a newer host",
            22621,
            vec![win("10.0.20348.2461")],
            [None, Some(0)],
        ),
        (
            "the prefix is a string test (strings.HasPrefix), the window reads numbers",
            17763,
            vec![win("10.0.177630.1")],
            [Some(0), None],
        ),
        (
            "Default is Only(DefaultSpec()): orderedPlatformComparer.Less keeps index order, \
             where 1.6.18's matchComparer.Less takes the higher revision",
            17763,
            vec![none.clone(), win("10.0.17763.5")],
            [Some(0), Some(0)],
        ),
    ];
    for (source, build, list, want) in cases {
        let list = cands(&list.into_iter().map(Some).collect::<Vec<_>>());
        let got = [early, late].map(|p| pick(p, &host(build), &list).selected);
        assert_eq!(got, want, "{source}");
    }
    let list = cands(&[Some(none), Some(win("10.0.17763.5"))]);
    let mid = RuntimeProfile::CONTAINERD_1_6_18;
    assert_eq!(pick(mid, &host(17763), &list).selected, Some(1));
}

#[test]
fn matching_rules() {
    let h = host(17763);
    let p = RuntimeProfile::CONTAINERD_2_3;
    assert!(matches(p, &h, &win("10.0.17763.5830")));
    assert!(!matches(p, &h, &win("10.0.20348.2461")));
    // No os.version: matches every Windows host.
    assert!(matches(p, &h, &Platform::new("windows", "amd64")));
    // Unparsable os.version is 0.0.0: never matches a real host.
    assert!(!matches(p, &h, &win("ltsc2019")));
    // Empty host version matches everything.
    assert!(matches(
        p,
        &Platform::new("windows", "amd64"),
        &win("10.0.20348")
    ));
    // os and arch normalisation.
    assert!(matches(
        p,
        &h,
        &Platform::new("Windows", "x86_64").with_os_version("10.0.17763")
    ));
    assert!(!matches(p, &h, &Platform::new("linux", "amd64")));
    assert!(!matches(
        p,
        &h,
        &Platform::new("windows", "arm64").with_os_version("10.0.17763")
    ));
    let arm64 = Platform::new("linux", "arm64");
    assert!(matches(
        p,
        &arm64,
        &Platform::new("linux", "aarch64").with_variant("v8")
    ));
    assert!(!matches(
        p,
        &arm64,
        &Platform::new("linux", "arm64").with_variant("v9")
    ));
    let armv7 = Platform::new("linux", "arm").with_variant("v7");
    assert!(matches(p, &armv7, &Platform::new("linux", "armhf")));
    assert!(matches(
        p,
        &armv7,
        &Platform::new("linux", "arm").with_variant("v6")
    ));
    assert!(!matches(
        p,
        &armv7,
        &Platform::new("linux", "arm").with_variant("v8")
    ));
}

#[test]
fn os_features_only_checked_from_2_3() {
    let h = host(20348);
    let mut win32k = win("10.0.20348.1");
    win32k.os_features = vec!["win32k".into()];
    let mut other = win("10.0.20348.1");
    other.os_features = vec!["hyperv".into()];
    for profile in RuntimeProfile::CONTAINERD {
        assert!(
            matches(profile, &h, &win32k),
            "{profile}: win32k is stripped"
        );
        assert_eq!(
            matches(profile, &h, &other),
            !profile.checks_features(),
            "{profile}"
        );
    }
    let mut h_hv = h.clone();
    h_hv.os_features = vec!["hyperv".into()];
    assert!(matches(RuntimeProfile::CONTAINERD_2_3, &h_hv, &other));
    assert_eq!(
        RuntimeProfile::CONTAINERD.map(|p| p.checks_features()),
        [
            false, false, false, false, false, false, false, false, false, true, true
        ]
    );
}

fn cands(platforms: &[Option<Platform>]) -> Vec<Candidate<'static>> {
    platforms
        .iter()
        .map(|p| Candidate {
            platform: p.clone().map(Cow::Owned),
            ..Candidate::default()
        })
        .collect()
}

/// containerd/platforms `Test_PlatformOrder`.
#[test]
fn containerd_platform_order_vectors() {
    let linux = Some(Platform::new("linux", "amd64"));
    let ws2022 = Some(win("10.0.20348.3091"));
    let ws2025 = Some(win("10.0.26100.2894"));
    let ws2025r = Some(win("10.0.26100.3000"));
    let cases = [
        (
            "10.0.20348.3091",
            vec![linux.clone(), ws2022.clone(), ws2025.clone()],
            1,
        ),
        (
            "10.0.26100.2894",
            vec![linux.clone(), ws2022.clone(), ws2025.clone()],
            2,
        ),
        (
            "10.0.26100.2894",
            vec![linux.clone(), ws2022.clone(), ws2025r.clone()],
            2,
        ),
    ];
    for (h, list, want) in cases {
        for profile in [
            RuntimeProfile::CONTAINERD_2_2,
            RuntimeProfile::CONTAINERD_2_3,
            RuntimeProfile::CONTAINERD_NEXT,
        ] {
            let sel = pick(profile, &win(h), &cands(&list));
            assert_eq!(sel.selected, Some(want), "{profile} host {h}");
        }
    }
}

/// containerd 1.5's matcher (`containerd-1.5`), one row per rule, each citing the function
/// read: containerd v1.5.2 as kubernetes/kubernetes vendors it (commit
/// b1c51a58ce46808275d8e72b3e11c814fbb176f9, `vendor/modules.txt` naming
/// `github.com/containerd/containerd v1.5.2`), files under
/// `vendor/github.com/containerd/containerd/platforms/`. Each row also says what
/// `containerd-1.6.0` answers: the same everywhere (issue 33, item 6: 1.6.0 – 1.6.17 kept this
/// `matchComparer.Match`, the OS-as-written test came with containerd#8106 in 1.6.18).
#[test]
fn containerd_1_5_rules_from_its_code() {
    // (source and rule, host build, entry, 1.5 matches, 1.6.0 matches)
    let cases: &[(&str, u16, Platform, bool, bool)] = &[
        (
            "defaults_windows.go matchComparer.Match: strings.HasPrefix(p.OSVersion, osVersionPrefix)",
            17763,
            win("10.0.17763.5830"),
            true,
            true,
        ),
        (
            "defaults_windows.go matchComparer.Match: another build does not have the prefix",
            17763,
            win("10.0.20348.2461"),
            false,
            false,
        ),
        (
            "defaults_windows.go matchComparer.Match: no fallback, an entry without os.version has no prefix",
            17763,
            Platform::new("windows", "amd64"),
            false,
            false,
        ),
        (
            "platforms.go matcher.Match: Normalize (database.go normalizeOS) lower-cases the entry's OS",
            17763,
            Platform::new("Windows", "amd64").with_os_version("10.0.17763.1"),
            true,
            true,
        ),
        (
            "defaults_windows.go Default: Ordered(DefaultSpec(), linux) under the prefix rule, so a Linux entry matches no Windows host",
            17763,
            Platform::new("linux", "amd64"),
            false,
            false,
        ),
    ];
    for (rule, build, entry, want_1_5, want_1_6_0) in cases {
        let h = host(*build);
        let got = matches(RuntimeProfile::CONTAINERD_1_5, &h, entry);
        assert_eq!(got, *want_1_5, "containerd-1.5: {rule}");
        let got = matches(RuntimeProfile::CONTAINERD_1_6_0, &h, entry);
        assert_eq!(got, *want_1_6_0, "containerd-1.6.0: {rule}");
    }
    // defaults_windows.go matchComparer.Less: of two matches, the larger revision first.
    let list = cands(&[Some(win("10.0.17763.100")), Some(win("10.0.17763.2000"))]);
    let sel = pick(RuntimeProfile::CONTAINERD_1_5, &host(17763), &list);
    assert_eq!(sel.selected, Some(1));
}

/// containerd 1.4's matcher (`containerd-1.4`), one row per rule, each citing the function
/// read: containerd v1.4.1 as dageita/frontend-websocket vendors it (commit
/// 2bb8c1357583b15180793ba5d0ae9605d35a3537, `vendor/modules.txt` naming
/// `github.com/containerd/containerd v1.4.1`), files under
/// `vendor/github.com/containerd/containerd/`. Each row also says whether the pulled image
/// starts on the host ([`runs`]) and which finding a node gets.
#[test]
fn containerd_1_4_rules_from_its_code() {
    // (source and rule, host build, entry, 1.4 matches, the image starts)
    let cases: &[(&str, u16, Platform, bool, bool)] = &[
        (
            "platforms/platforms.go matcher.Match: OS, architecture, variant; the host's build matches",
            17763,
            win("10.0.17763.5830"),
            true,
            true,
        ),
        (
            "platforms/platforms.go matcher.Match: os.version is not read, another build matches (wrong-build-selected)",
            17763,
            win("10.0.20348.2461"),
            true,
            false,
        ),
        (
            "platforms/platforms.go matcher.Match: an entry without os.version matches",
            17763,
            Platform::new("windows", "amd64"),
            true,
            true,
        ),
        (
            "platforms/platforms.go matcher.Match: Normalize lower-cases the entry's OS",
            17763,
            Platform::new("Windows", "amd64").with_os_version("10.0.17763.1"),
            true,
            true,
        ),
        (
            "platforms/platforms.go matcher.Match: another architecture does not match",
            17763,
            Platform::new("windows", "arm64").with_os_version("10.0.17763.1"),
            false,
            false,
        ),
        (
            "platforms/defaults_windows.go Default: Ordered(DefaultSpec(), linux/amd64), a Linux entry matches a Windows host (wrong-build-selected: it cannot start)",
            17763,
            Platform::new("linux", "amd64"),
            true,
            false,
        ),
        (
            "platforms/defaults_windows.go Default: the fallback is linux/amd64 as written, not linux/arm64",
            17763,
            Platform::new("linux", "arm64"),
            false,
            false,
        ),
    ];
    let p = RuntimeProfile::CONTAINERD_1_4;
    for (rule, build, entry, want_match, want_runs) in cases {
        let h = host(*build);
        assert_eq!(matches(p, &h, entry), *want_match, "match: {rule}");
        assert_eq!(runs(p, &h, entry), *want_runs, "starts: {rule}");
    }
    // platforms/compare.go orderedPlatformComparer.Less: the Windows entries (the first
    // platform of Ordered) before the Linux one, whatever their place in the list.
    let linux = Some(Platform::new("linux", "amd64"));
    let list = cands(&[linux.clone(), Some(win("10.0.20348.2461"))]);
    assert_eq!(pick(p, &host(17763), &list).selected, Some(1));
    // images/image.go Manifest: sort.SliceStable by Less, the first taken: of two Windows
    // entries the first in the list, even of another build.
    let list = cands(&[Some(win("10.0.20348.1")), Some(win("10.0.17763.1"))]);
    assert_eq!(pick(p, &host(17763), &list).selected, Some(0));
    // No Windows entry: the Linux one is pulled (see `engine::judge::hosts`).
    let list = cands(&[linux, Some(Platform::new("linux", "arm64"))]);
    assert_eq!(pick(p, &host(17763), &list).selected, Some(0));
}

/// The winner among several matches differs per profile (see `docs/matching.md`).
#[test]
fn winner_per_profile() {
    let list = cands(&[
        Some(Platform::new("linux", "amd64")),
        Some(win("10.0.20348.2227")),
        Some(win("10.0.26100.100")),
        Some(win("10.0.20348.999")),
        Some(Platform::new("windows", "amd64")),
    ]);
    let h = host(26100);
    let got: Vec<_> = RuntimeProfile::CONTAINERD
        .iter()
        .map(|p| pick(*p, &h, &list).selected.unwrap())
        .collect();
    // 1.4: any Windows entry, index order (the first Windows one); 1.5.2 – 1.5.x,
    // 1.6.0 – 1.6.17: only the host's own build (prefix); 1.6.18 – 1.6.22: the prefix or
    // no os.version, the highest revision (100 over none's 0); 1.6: highest
    // numeric revision (2227); 1.7.0 – 1.7.5: the prefix or no os.version, index order (the
    // host's own build comes first); 1.7.6+: index order (first Windows entry); 2.2+:
    // os.version string, descending ("10.0.26100.100" is the greatest string).
    assert_eq!(got, vec![1, 2, 2, 2, 1, 2, 1, 1, 2, 2, 2]);
    // String order, not numeric: "10.0.20348.999" > "10.0.20348.2227".
    let list = cands(&[Some(win("10.0.20348.2227")), Some(win("10.0.20348.999"))]);
    assert_eq!(
        pick(RuntimeProfile::CONTAINERD_2_3, &host(20348), &list).selected,
        Some(1)
    );
    assert_eq!(
        pick(RuntimeProfile::CONTAINERD_1_6, &host(20348), &list).selected,
        Some(0)
    );
    // Empty os.version sorts last among matches in 2.2+.
    let list = cands(&[
        Some(Platform::new("windows", "amd64")),
        Some(win("10.0.20348.1")),
    ]);
    assert_eq!(
        pick(RuntimeProfile::CONTAINERD_2_3, &host(20348), &list).selected,
        Some(1)
    );
    assert_eq!(
        pick(RuntimeProfile::CONTAINERD_1_7, &host(20348), &list).selected,
        Some(0)
    );
}

#[test]
fn no_match_and_platformless_entries() {
    let list = cands(&[
        Some(Platform::new("linux", "amd64")),
        Some(win("10.0.20348.1")),
    ]);
    let sel = pick(RuntimeProfile::CONTAINERD_2_3, &host(17763), &list);
    assert_eq!(sel.selected, None);
    assert_eq!(sel.considered.len(), 2);
    assert!(sel.considered.iter().all(|c| !c.matched));

    // A platform-less entry is tried only when it comes first, and then by its config.
    let mut list = cands(&[None, Some(win("10.0.20348.1"))]);
    assert_eq!(
        pick(RuntimeProfile::CONTAINERD_2_3, &host(20348), &list).selected,
        Some(1)
    );
    let sel = pick(RuntimeProfile::CONTAINERD_2_3, &host(17763), &list);
    assert_eq!(sel.selected, None, "config unknown: the pull fails");
    list[0].config_platform = Some(win("10.0.17763.1"));
    assert_eq!(
        pick(RuntimeProfile::CONTAINERD_2_3, &host(17763), &list).selected,
        Some(0)
    );
    // Two platform-less entries: only the first is tried.
    let mut list = cands(&[None, None]);
    list[0].config_platform = Some(Platform::new("linux", "amd64"));
    list[1].config_platform = Some(win("10.0.17763.1"));
    assert_eq!(
        pick(RuntimeProfile::CONTAINERD_2_3, &host(17763), &list).selected,
        None
    );
}

/// One row per disagreement class of issue 12 ("node-truth"): a list, a host, a runtime,
/// and the entry the runtime's own code takes, with the file and function that decide it.
/// Every row failed before the change (no Linux fallback or variant order, no cri-o or
/// containerd-2.0 profile, every win32k stripped, a platform-less nested index refused).
struct Truth {
    source: &'static str,
    profile: RuntimeProfile,
    format: ListFormat,
    host: Platform,
    list: Vec<Candidate<'static>>,
    want: Option<usize>,
}

fn entry(p: Platform) -> Candidate<'static> {
    Candidate {
        platform: Some(Cow::Owned(p)),
        ..Candidate::default()
    }
}

fn platformless(config: Option<Platform>) -> Candidate<'static> {
    Candidate {
        config_platform: config,
        ..Candidate::default()
    }
}

fn linux(arch: &str, variant: Option<&str>) -> Platform {
    let p = Platform::new("linux", arch);
    variant.map_or(p.clone(), |v| p.with_variant(v))
}

fn truth(
    source: &'static str,
    profile: RuntimeProfile,
    host: Platform,
    list: Vec<Candidate<'static>>,
    want: Option<usize>,
) -> Truth {
    Truth {
        source,
        profile,
        format: ListFormat::Oci,
        host,
        list,
        want,
    }
}

fn zstd(p: Platform) -> Candidate<'static> {
    Candidate {
        zstd: true,
        ..entry(p)
    }
}

/// containerd: Linux platform vector and order, the 1.7/2.0 split, nesting.
fn containerd_truth_rows() -> Vec<Truth> {
    let row = truth;
    let nested = Candidate {
        nested: true,
        ..platformless(None)
    };
    vec![
        row(
            "containerd/platforms compare.go platformVector/Only: amd64 also takes 386",
            RuntimeProfile::CONTAINERD_2_3,
            linux("amd64", None),
            vec![entry(linux("arm64", None)), entry(linux("386", None))],
            Some(1),
        ),
        row(
            "containerd/platforms compare.go platformVector/Only: arm64 takes arm/v8..v5",
            RuntimeProfile::CONTAINERD_1_7,
            linux("arm64", None),
            vec![entry(linux("amd64", None)), entry(linux("arm", Some("v7")))],
            Some(1),
        ),
        row(
            "containerd/platforms compare.go orderedPlatformComparer.Less + core/images \
             handlers.go LimitManifests sort: arm/v7 over arm/v6 whatever the order",
            RuntimeProfile::CONTAINERD_2_3,
            linux("arm", Some("v7")),
            vec![
                entry(linux("arm", Some("v6"))),
                entry(linux("arm", Some("v7"))),
            ],
            Some(1),
        ),
        row(
            "containerd v1.7 images/image.go Manifest: a platform-less entry's config is \
             matched by OS and architecture only",
            RuntimeProfile::CONTAINERD_1_7,
            host(17763),
            vec![platformless(Some(win("10.0.20348.1")))],
            Some(0),
        ),
        row(
            "containerd v2.0 core/images/image.go Manifest (ConfigPlatform): the full matcher",
            RuntimeProfile::CONTAINERD_2_0,
            host(17763),
            vec![platformless(Some(win("10.0.20348.1")))],
            None,
        ),
        row(
            "containerd core/images/image.go Manifest: a platform-less child index is taken \
             (limit 1) and walked",
            RuntimeProfile::CONTAINERD_2_3,
            host(17763),
            vec![entry(linux("amd64", None)), nested],
            Some(1),
        ),
    ]
}

/// containerd: `os.features` with the first `win32k` set aside (2.3 and later).
fn feature_truth_rows() -> Vec<Truth> {
    let row = truth;
    let mut win32k2 = win("10.0.20348.1");
    win32k2.os_features = vec!["win32k".into(), "win32k".into()];
    let mut win32k_hyperv = win32k2.clone();
    win32k_hyperv.os_features.push("hyperv".into());
    let mut hyperv_win32k = win("10.0.20348.1");
    hyperv_win32k.os_features = vec!["hyperv".into(), "win32k".into()];
    let mut hyperv_host = host(20348);
    hyperv_host.os_features = vec!["hyperv".into()];
    vec![
        row(
            "containerd/platforms matcher.Match as 2.3 vendors it (platforms#31 strips \
             win32k): only the first win32k is set aside, the second is no subset of a \
             default host's features (issue 33, item 5)",
            RuntimeProfile::CONTAINERD_2_3,
            host(20348),
            vec![entry(win32k2.clone())],
            None,
        ),
        row(
            "containerd/platforms matcher.Match, containerd main: win32k twice does not match",
            RuntimeProfile::CONTAINERD_NEXT,
            host(20348),
            vec![entry(win32k2.clone())],
            None,
        ),
        row(
            "containerd/platforms matcher.Match: one win32k set aside, the rest a subset of \
             the host's features",
            RuntimeProfile::CONTAINERD_2_3,
            hyperv_host,
            vec![entry(hyperv_win32k)],
            Some(0),
        ),
        row(
            "containerd/platforms platforms.go matcher.Match: a feature other than win32k \
             is still not a subset of a default host's",
            RuntimeProfile::CONTAINERD_NEXT,
            host(20348),
            vec![entry(win32k_hyperv)],
            None,
        ),
        row(
            "containerd/platforms rc.2 (2.2): os.features not checked",
            RuntimeProfile::CONTAINERD_2_2,
            host(20348),
            vec![entry(win32k2)],
            Some(0),
        ),
    ]
}

/// CRI-O: containers/image's wanted list, exact strings, zstd, platform-less entries.
fn crio_truth_rows() -> Vec<Truth> {
    let row = truth;
    vec![
        row(
            "containers/image internal/pkg/platform platform_matcher.go WantedPlatforms: \
             no 386 fallback for amd64",
            RuntimeProfile::CRI_O,
            linux("amd64", None),
            vec![entry(linux("386", None))],
            None,
        ),
        row(
            "containers/image platform_matcher.go MatchesPlatform: exact strings, no \
             normalisation",
            RuntimeProfile::CRI_O,
            linux("amd64", None),
            vec![entry(linux("x86_64", None)), entry(linux("amd64", None))],
            Some(1),
        ),
        row(
            "containers/image platform_matcher.go WantedPlatforms: arm64 detected v8 comes \
             before the empty variant",
            RuntimeProfile::CRI_O,
            linux("arm64", None),
            vec![
                entry(linux("arm64", None)),
                entry(linux("arm64", Some("v8"))),
            ],
            Some(1),
        ),
        row(
            "containers/image internal/manifest oci_index.go chooseInstance/isPreferredOver: \
             the zstd instance wins over its gzip twin",
            RuntimeProfile::CRI_O,
            linux("amd64", None),
            vec![entry(linux("amd64", None)), zstd(linux("amd64", None))],
            Some(1),
        ),
        row(
            "containers/image oci_index.go chooseInstance: a platform-less entry is a \
             candidate ranked last, its config unread",
            RuntimeProfile::CRI_O,
            linux("amd64", None),
            vec![
                entry(linux("arm64", None)),
                platformless(Some(linux("arm64", None))),
            ],
            Some(1),
        ),
        Truth {
            format: ListFormat::Docker,
            ..row(
                "containers/image internal/manifest docker_schema2_list.go chooseInstance: \
                 first exact match in list order; compression and platform-less ignored",
                RuntimeProfile::CRI_O,
                linux("amd64", None),
                vec![
                    platformless(Some(linux("amd64", None))),
                    entry(linux("amd64", None)),
                    zstd(linux("amd64", None)),
                ],
                Some(1),
            )
        },
    ]
}

/// containerd 1.6 and 1.7 on odd spellings (issue 22, item 12).
fn odd_spelling_rows() -> Vec<Truth> {
    let row = truth;
    let upper = Platform::new("Windows", "amd64").with_os_version("10.0.17763.1");
    vec![
        row(
            "containerd 1.6 (issue 22 differential run): the entry's OS is compared as \
             written, Windows is not windows",
            RuntimeProfile::CONTAINERD_1_6,
            host(17763),
            vec![entry(upper.clone())],
            None,
        ),
        row(
            "containerd/platforms v0.2 (1.7) platforms.go Normalize lower-cases the OS",
            RuntimeProfile::CONTAINERD_1_7,
            host(17763),
            vec![entry(upper)],
            Some(0),
        ),
        row(
            "containerd 1.6 platforms/defaults_windows.go revision (strconv.Atoi) and \
             matchComparer.Less: a -1 revision sorts below 0",
            RuntimeProfile::CONTAINERD_1_6,
            host(17763),
            vec![entry(win("10.0.17763.-1")), entry(win("10.0.17763"))],
            Some(1),
        ),
        row(
            "containerd/platforms v0.2 (1.7) defaults_windows.go getOSVersion \
             (strconv.Atoi): a leading + is a number",
            RuntimeProfile::CONTAINERD_1_7,
            host(17763),
            vec![entry(win("10.0.+17763.1"))],
            Some(0),
        ),
        row(
            "containerd 1.6 platforms/defaults_windows.go GetOsVersion (strconv.Atoi): the same",
            RuntimeProfile::CONTAINERD_1_6,
            host(17763),
            vec![entry(win("+10.0.17763.1"))],
            Some(0),
        ),
        row(
            "containerd/platforms v0.2 (1.7) getOSVersion: uint16(build) keeps the low 16 bits",
            RuntimeProfile::CONTAINERD_1_7,
            host(17763),
            vec![entry(win("10.0.83299.1"))],
            Some(0),
        ),
        row(
            "containerd/platforms platform_windows_compat.go getWindowsOSVersion \
             (strconv.ParseUint): a leading + or a build above 65535 is 0.0.0",
            RuntimeProfile::CONTAINERD_2_0,
            host(17763),
            vec![entry(win("10.0.+17763.1")), entry(win("10.0.83299.1"))],
            None,
        ),
    ]
}

/// containerd 1.6.0 – 1.6.17 (issue 21, item 3): `platforms/defaults_windows.go`
/// `matchComparer.Match` returns `strings.HasPrefix(p.OSVersion, m.osVersionPrefix)` for a
/// Windows host, the prefix being the host's `major.minor.build`; the fallback for entries
/// without `os.version` (`return p.OSVersion == ""`) came with containerd#8106 (asked for in containerd#7431)
/// in 1.6.18.
fn early_16_rows() -> Vec<Truth> {
    let row = truth;
    let bare = Platform::new("windows", "amd64");
    vec![
        row(
            "containerd 1.6.0-1.6.17 platforms/defaults_windows.go matchComparer.Match: \
             HasPrefix(\"\", \"10.0.17763\") is false, a HostProcess entry without \
             os.version matches nothing",
            RuntimeProfile::CONTAINERD_1_6_0,
            host(17763),
            vec![entry(linux("amd64", None)), entry(bare.clone())],
            None,
        ),
        row(
            "containerd 1.6.18+ (containerd#7431) platforms/defaults_windows.go \
             matchComparer.Match: return p.OSVersion == \"\"",
            RuntimeProfile::CONTAINERD_1_6,
            host(17763),
            vec![entry(linux("amd64", None)), entry(bare)],
            Some(1),
        ),
        row(
            "containerd 1.6.0-1.6.17 matchComparer.Match: the prefix of the host's \
             build, no LTSC window (a WS2022-era host takes only 20348 entries)",
            RuntimeProfile::CONTAINERD_1_6_0,
            host(22621),
            vec![entry(win("10.0.20348.1")), entry(win("10.0.22621.5"))],
            Some(1),
        ),
        row(
            "containerd 1.6.0-1.6.17 matchComparer.Match: the prefix of the host's \
             build, no LTSC window (an older entry is not taken)",
            RuntimeProfile::CONTAINERD_1_6_0,
            host(22621),
            vec![entry(win("10.0.20348.1"))],
            None,
        ),
        row(
            "containerd 1.6.0-1.6.17 matchComparer.Less: the larger revision first",
            RuntimeProfile::CONTAINERD_1_6_0,
            host(17763),
            vec![entry(win("10.0.17763.1")), entry(win("10.0.17763.5830"))],
            Some(1),
        ),
    ]
}

/// Docker Engine 19.03 – 24.0 (issue 21, item 3), read in moby/moby at commit 46cf8cec
/// (`distribution/pull_v2_windows.go`, 2023, the 24.0 line) and 3f948df4
/// (`distribution/pull_v2.go`); the same selection since moby#37350 (2018-06), see
/// `docs/matching.md`, "Docker Engine".
fn docker_rows() -> Vec<Truth> {
    let row = truth;
    let docker = RuntimeProfile::DOCKER_19_03;
    vec![
        row(
            "moby 46cf8cec pull_v2_windows.go filterManifests/checkImageCompatibility: a \
             build above the host's is left out",
            docker,
            host(17763),
            vec![entry(win("10.0.20348.1"))],
            None,
        ),
        row(
            "moby 46cf8cec pull_v2_windows.go checkImageCompatibility: a build below the \
             host's is kept; without an exact build, index order (WS2019 image on 22621)",
            docker,
            host(22621),
            vec![entry(win("10.0.17763.5")), entry(win("10.0.20348.1"))],
            Some(0),
        ),
        row(
            "moby 46cf8cec pull_v2_windows.go manifestsByVersion.Less/versionMatch under \
             sort.Stable: the host's exact build first",
            docker,
            host(20348),
            vec![entry(win("10.0.17763.5")), entry(win("10.0.20348.1"))],
            Some(1),
        ),
        row(
            "moby 46cf8cec pull_v2_windows.go versionMatch: HasPrefix(actual, expected+\".\"), \
             so 10.0.20348 without revision is not the host's build",
            docker,
            host(20348),
            vec![entry(win("10.0.17763.5")), entry(win("10.0.20348"))],
            Some(0),
        ),
        row(
            "moby 46cf8cec pull_v2_windows.go checkImageCompatibility: fewer than three \
             fields (no os.version) is kept, and is not an exact build",
            docker,
            host(17763),
            vec![
                entry(linux("amd64", None)),
                entry(Platform::new("windows", "amd64")),
                entry(win("10.0.17763.1")),
            ],
            Some(2),
        ),
        row(
            "moby 46cf8cec pull_v2_windows.go checkImageCompatibility: a build strconv.Atoi \
             refuses is kept, major and minor are not compared",
            docker,
            host(17763),
            vec![entry(win("10.0.17763x.1")), entry(win("6.3.9600.1"))],
            Some(0),
        ),
    ]
}

/// Docker Engine, continued: how moby reads the list's descriptors.
fn docker_list_rows() -> Vec<Truth> {
    let row = truth;
    let docker = RuntimeProfile::DOCKER_19_03;
    let on = |os: &str, arch: &str, v: &str| Platform::new(os, arch).with_os_version(v);
    let mut hyperv = win("10.0.17763.1");
    hyperv.os_features = vec!["hyperv".into()];
    let nested = Candidate {
        nested: true,
        ..entry(win("10.0.17763.1"))
    };
    vec![
        row(
            "moby 46cf8cec pull_v2_windows.go filterManifests (system.IsOSSupported, \
             strings.EqualFold): Windows capitalised is windows",
            docker,
            host(17763),
            vec![entry(on("Windows", "amd64", "10.0.17763.1"))],
            Some(0),
        ),
        row(
            "moby 46cf8cec pull_v2_windows.go filterManifests: Architecture == runtime.GOARCH \
             as written (x86_64 is not amd64), the variant and os.features not read",
            docker,
            host(17763),
            vec![
                entry(on("windows", "x86_64", "10.0.17763.1")),
                entry(Platform {
                    variant: Some("v3".into()),
                    ..hyperv
                }),
            ],
            Some(1),
        ),
        row(
            "moby 3f948df4 pull_v2.go pullManifestList: an entry without platform has the \
             zero platform and never matches",
            docker,
            host(17763),
            vec![platformless(Some(win("10.0.17763.1")))],
            None,
        ),
        row(
            "moby 3f948df4 pull_v2.go pullManifestList: a matching child that is a list is \
             'unsupported manifest format'",
            docker,
            host(17763),
            vec![nested],
            None,
        ),
    ]
}

/// What the Docker daemon pulls and what then starts: moby `daemon/daemon_windows.go`
/// `setDefaultIsolation` defaults to process isolation on Windows Server (Hyper-V only on
/// client SKUs or with `--exec-opt isolation=hyperv`), so an older build it pulls fails at
/// start (`wrong-build-selected`), while a build Microsoft's matrix allows runs.
#[test]
fn docker_pulls_older_builds_that_process_isolation_cannot_start() {
    let docker = RuntimeProfile::DOCKER_19_03;
    let cases = [
        (17763, "10.0.17763.5830", true, true),
        (20348, "10.0.17763.5830", true, false),
        (22621, "10.0.20348.1", true, true),
        (22621, "10.0.17763.1", true, false),
        (17763, "10.0.20348.1", false, false),
    ];
    for (h, image, pulled, starts) in cases {
        assert_eq!(
            matches(docker, &host(h), &win(image)),
            pulled,
            "{h} {image}"
        );
        assert_eq!(runs(docker, &host(h), &win(image)), starts, "{h} {image}");
    }
}

fn truth_rows() -> Vec<Truth> {
    let mut rows = docker_rows();
    rows.extend(docker_list_rows());
    rows.extend(early_16_rows());
    rows.extend(containerd_truth_rows());
    rows.extend(feature_truth_rows());
    rows.extend(crio_truth_rows());
    rows.extend(odd_spelling_rows());
    rows
}

#[test]
fn node_truth_rules_per_runtime() {
    let rows = truth_rows();
    assert_eq!(rows.len(), 39);
    let wrong: Vec<String> = rows
        .iter()
        .filter_map(|t| {
            let got = select(t.profile, &t.host, t.format, &t.list).selected;
            (got != t.want).then(|| {
                format!(
                    "{} ({}, host {}): got {got:?}, want {:?}",
                    t.source, t.profile, t.host, t.want
                )
            })
        })
        .collect();
    assert!(
        wrong.is_empty(),
        "rows the selection gets wrong:\n{}",
        wrong.join("\n")
    );
}

/// containerd's vector in full, and CRI-O's wanted list, per host.
#[test]
fn platform_vectors_and_wanted_lists() {
    let v = |a, var| containerd_vector(a, var);
    let pairs = |xs: &[(&str, &str)]| -> Vec<(String, String)> {
        xs.iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    };
    assert_eq!(v("amd64", ""), pairs(&[("amd64", ""), ("386", "")]));
    assert_eq!(
        v("amd64", "v3"),
        pairs(&[("amd64", "v3"), ("amd64", "v2"), ("amd64", ""), ("386", "")])
    );
    assert_eq!(
        v("arm64", ""),
        pairs(&[
            ("arm64", ""),
            ("arm", "v8"),
            ("arm", "v7"),
            ("arm", "v6"),
            ("arm", "v5")
        ])
    );
    assert_eq!(v("arm", "v6"), pairs(&[("arm", "v6"), ("arm", "v5")]));
    assert_eq!(v("s390x", ""), pairs(&[("s390x", "")]));
    let w = |p: Platform| -> Vec<String> {
        crio_wanted(&p)
            .into_iter()
            .map(|(_, a, v)| format!("{a}/{v}"))
            .collect()
    };
    assert_eq!(w(linux("amd64", None)), ["amd64/"]);
    assert_eq!(w(linux("arm64", None)), ["arm64/v8", "arm64/"]);
    assert_eq!(
        w(linux("arm", Some("v7"))),
        ["arm/v7", "arm/v6", "arm/v5", "arm/"]
    );
    assert_eq!(w(linux("arm", Some("v6"))), ["arm/v6", "arm/v5", "arm/"]);
    assert_eq!(
        w(linux("riscv64", Some("rva22"))),
        ["riscv64/rva22", "riscv64/"]
    );
    // cri-o ignores os.version and os.features.
    assert!(matches(
        RuntimeProfile::CRI_O,
        &host(17763),
        &win("10.0.20348.1")
    ));
}

/// Issue 22, item 11: selection goes by platform only. A buildx attestation's
/// `unknown/unknown` never matches (and is listed as a candidate that does not); an entry
/// the selector is given is a candidate whatever its annotations.
#[test]
fn attestations_fail_by_their_platform() {
    let list = cands(&[
        Some(Platform::new("unknown", "unknown")),
        Some(Platform::new("windows", "amd64")),
    ]);
    for profile in RuntimeProfile::ALL {
        let h = if profile.runs_windows() {
            host(17763)
        } else {
            linux("amd64", None)
        };
        let sel = pick(profile, &h, &list);
        // containerd 1.6.0 – 1.6.17 take no Windows entry without os.version.
        let want = (profile.runs_windows() && !profile.windows_prefix_only()).then_some(1);
        assert_eq!(sel.selected, want, "{profile}");
        assert_eq!(sel.considered.len(), 2, "{profile}");
        assert!(!sel.considered.iter().any(|c| c.index == 0 && c.matched));
    }
}

#[test]
fn parses_platform_flags() {
    let p = Platform::parse("windows/amd64:10.0.17763").unwrap();
    assert_eq!(p, win("10.0.17763"));
    assert_eq!(p.to_string(), "windows/amd64:10.0.17763");
    let p = Platform::parse("linux/arm64/v8").unwrap();
    assert_eq!(p.variant.as_deref(), Some("v8"));
    assert_eq!(p.to_string(), "linux/arm64");
    for bad in [
        "",
        "linux",
        "linux/",
        "/amd64",
        "a/b/c/d",
        "linux/amd64:10.0.17763",
        "windows/amd64:ltsc2016",
        "windows/amd64:23H2",
        "linux/amd64:ltsc2022",
        "windows/am d64",
    ] {
        assert!(Platform::parse(bad).is_err(), "{bad}");
    }
    // Issue 12: release names stand for their build (hcsshim `osversion` names).
    for (name, version) in [
        ("ltsc2019", "10.0.17763"),
        ("1809", "10.0.17763"),
        ("ltsc2022", "10.0.20348"),
        ("LTSC2025", "10.0.26100"),
        ("20H2", "10.0.19042"),
    ] {
        let p = Platform::parse(&format!("windows/amd64:{name}")).unwrap();
        assert_eq!(p, win(version), "{name}");
    }
}

#[test]
fn profile_names_roundtrip() {
    for p in RuntimeProfile::ALL {
        assert_eq!(p.name().parse::<RuntimeProfile>().unwrap(), p);
    }
    let err = "containerd-0.1".parse::<RuntimeProfile>().unwrap_err();
    assert!(err.contains("containerd-2.3"), "{err}");
}

#[test]
fn build_names() {
    assert!(build_name(17763).unwrap().contains("2019"));
    assert!(build_name(20348).unwrap().contains("2022"));
    assert!(build_name(26100).unwrap().contains("2025"));
    assert_eq!(build_name(12345), None);
}

proptest! {
    /// Below WS2022 only the exact build runs; from WS2022 on the container never runs
    /// a build newer than the host; major/minor are irrelevant when equal.
    #[test]
    fn window_invariants(h in 10000u16..30000, c in 10000u16..30000) {
        for profile in RuntimeProfile::CONTAINERD {
            let ok = profile.compatible(WindowsVersion::host(h), WindowsVersion::host(c));
            if h < BUILD_WS2022 {
                prop_assert_eq!(ok, h == c);
            } else {
                prop_assert!(!ok || (c <= h && c >= BUILD_WS2022));
                if c == h { prop_assert!(ok); }
            }
        }
    }

    #[test]
    fn selection_is_a_matching_entry(
        builds in proptest::collection::vec(prop_oneof![Just(17763u16), Just(20348), Just(22621), Just(26100)], 0..6),
        h in prop_oneof![Just(17763u16), Just(20348), Just(22621), Just(26100), Just(26200)],
    ) {
        let list = cands(&builds.iter().map(|b| Some(win(&format!("10.0.{b}.1")))).collect::<Vec<_>>());
        for profile in RuntimeProfile::CONTAINERD {
            let sel = pick(profile, &host(h), &list);
            match sel.selected {
                Some(i) => prop_assert!(matches(profile, &host(h), list[i].platform.as_ref().unwrap())),
                None => prop_assert!(list.iter().all(|c| !matches(profile, &host(h), c.platform.as_ref().unwrap()))),
            }
        }
    }

    #[test]
    fn platform_parse_never_panics(s in ".{0,40}") {
        let _ = Platform::parse(&s);
    }
}

mod edges;
