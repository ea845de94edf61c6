//! Issue 33, item 6: containerd 1.6's edge cases — a Windows host without `os.version`,
//! architecture and OS spellings, odd `os.version` texts — as each release's `platforms` code
//! decides them, one row per case, with the 1.7 and 2.x answers beside them.
//!
//! Sources (docs/matching.md, "containerd 1.6 edge cases", says how each is tied to its release):
//! - 1.6.18 – 1.6.22: containerd v1.6.20 `platforms/defaults_windows.go` `matchComparer.Match`
//!   (`defaults.Match(p)`, then `p.OS == "windows"` as written, then
//!   `strings.HasPrefix(p.OSVersion, m.osVersionPrefix)` or `p.OSVersion == ""`) and `Less`
//!   (`revision`, `strconv.Atoi` of the fourth field, 0 on error), `platforms/database.go`
//!   `normalizeOS` (lower-cased, `""` is `runtime.GOOS`) and `normalizeArch`, `platforms.go`
//!   `matcher.Match` (the entry normalised, OS, architecture and variant compared).
//! - 1.6.0 – 1.6.17: the same file before containerd#8106: `matchComparer.Match` is
//!   `defaults.Match(p)` then the prefix (no OS-as-written test, no fallback).
//! - 1.6.23 – 1.6.39: `matchComparer.Match` with `GetOsVersion` (`strconv.Atoi`, cut to
//!   `uint8`/`uint16`) and hcsshim `osversion.CheckHostAndContainerCompat` (containerd#8854):
//!   an empty host prefix reads 0.0.0, whose major no entry shares.
//! - 1.7.0 – 1.7.5: main's `windowsmatcher.Match` before containerd#8778 (its diff shows it; in
//!   release/1.7 until containerd#9069, 1.7.6): the entry normalised by the default matcher,
//!   then `strings.HasPrefix(p.OSVersion, m.osVersionPrefix)` or `p.OSVersion == ""`
//!   (containerd#8101); `Default` is `Only(DefaultSpec())`, so several matches keep index order.
//! - 1.7: containerd/platforms v0.2.1 `defaults_windows.go` `windowsmatcher.Match`
//!   (`m.OSVersion == "" || p.OSVersion == ""`, containerd/platforms#11, then `getOSVersion`).
//! - 2.0 / 2.2: containerd/platforms `platform_windows_compat.go` `windowsVersionMatcher.Match`
//!   (`isEmpty`), `getWindowsOSVersion` (`strings.Cut`, `strconv.ParseUint`), and
//!   `windowsMatchComparer.Less` (2.2: `os.version` strings, descending).

use super::*;

/// The profiles compared, in the order of each row's answers.
const PROFILES: [RuntimeProfile; 7] = [
    RuntimeProfile::CONTAINERD_1_6_0,
    RuntimeProfile::CONTAINERD_1_6_18,
    RuntimeProfile::CONTAINERD_1_6,
    RuntimeProfile::CONTAINERD_1_7_0,
    RuntimeProfile::CONTAINERD_1_7,
    RuntimeProfile::CONTAINERD_2_0,
    RuntimeProfile::CONTAINERD_2_2,
];

/// Taken: the entry at index 0.
const Y: Option<usize> = Some(0);
/// No match.
const N: Option<usize> = None;

/// One case: the host, the list's Windows entries (each with its platform), and the entry each
/// profile of [`PROFILES`] selects.
struct Edge {
    source: &'static str,
    host: Platform,
    list: Vec<Platform>,
    want: [Option<usize>; 7],
}

fn edge(
    source: &'static str,
    host: Platform,
    list: Vec<Platform>,
    want: [Option<usize>; 7],
) -> Edge {
    Edge {
        source,
        host,
        list,
        want,
    }
}

fn on(os: &str, arch: &str, version: &str) -> Platform {
    Platform::new(os, arch).with_os_version(version)
}

/// A Windows host whose platform states no `os.version`.
fn bare_host() -> Platform {
    Platform::new("windows", "amd64")
}

fn empty_host_rows() -> Vec<Edge> {
    vec![
        edge(
            "host without os.version, entry 10.0.17763.1: 1.6.0 – 1.6.22 matchComparer.Match \
             HasPrefix(v, \"\") holds; 1.6.23+ GetOsVersion(\"\") is 0.0.0 and \
             CheckHostAndContainerCompat refuses major 0 against 10; 1.7 windowsmatcher.Match \
             m.OSVersion == \"\"; 2.x windowsVersionMatcher.Match isEmpty",
            bare_host(),
            vec![win("10.0.17763.1")],
            [Y, Y, N, Y, Y, Y, Y],
        ),
        edge(
            "host without os.version, entry without one: every release (1.6.18+ \
             p.OSVersion == \"\"; 1.6.0 HasPrefix(\"\", \"\"))",
            bare_host(),
            vec![Platform::new("windows", "amd64")],
            [Y, Y, Y, Y, Y, Y, Y],
        ),
        edge(
            "host without os.version, [10.0.20348.1, none]: 1.6.0 – 1.6.22 take both, Less \
             puts revision 1 first; 1.6.23+ only the entry without os.version; 1.7, 2.0 index \
             order; 2.2 Less: \"10.0.20348.1\" > \"\"",
            bare_host(),
            vec![win("10.0.20348.1"), Platform::new("windows", "amd64")],
            [Y, Y, Some(1), Y, Y, Y, Y],
        ),
    ]
}

fn spelling_rows() -> Vec<Edge> {
    let arm64_host = on("windows", "arm64", "10.0.17763");
    vec![
        edge(
            "architecture x86_64: database.go normalizeArch (every release) makes it amd64",
            host(17763),
            vec![on("windows", "x86_64", "10.0.17763.1")],
            [Y, Y, Y, Y, Y, Y, Y],
        ),
        edge(
            "architecture AMD64: normalizeArch lower-cases it first",
            host(17763),
            vec![on("windows", "AMD64", "10.0.17763.1")],
            [Y, Y, Y, Y, Y, Y, Y],
        ),
        edge(
            "architecture x86-64: normalizeArch",
            host(17763),
            vec![on("windows", "x86-64", "10.0.17763.1")],
            [Y, Y, Y, Y, Y, Y, Y],
        ),
        edge(
            "architecture aarch64 on an arm64 host: normalizeArch makes it arm64",
            arm64_host,
            vec![on("windows", "aarch64", "10.0.17763.1")],
            [Y, Y, Y, Y, Y, Y, Y],
        ),
        edge(
            "architecture aarch64 on an amd64 host: the Windows matcher has no arm fallback \
             (matchComparer's defaults are NewMatcher, not Only's vector)",
            host(17763),
            vec![on("windows", "aarch64", "10.0.17763.1")],
            [N, N, N, N, N, N, N],
        ),
        edge(
            "OS Windows: 1.6.0 – 1.6.17 matchComparer.Match reads it normalised only; 1.6.18+ \
             (v1.6.20 matchComparer.Match) tests p.OS == \"windows\" as written; 1.7, 2.x \
             normalise",
            host(17763),
            vec![on("Windows", "amd64", "10.0.17763.1")],
            [Y, N, N, Y, Y, Y, Y],
        ),
        edge(
            "OS empty: normalizeOS gives runtime.GOOS (windows on a Windows node); 1.6.18+ \
             p.OS == \"windows\" as written refuses it",
            host(17763),
            vec![on("", "amd64", "10.0.17763.1")],
            [Y, N, N, Y, Y, Y, Y],
        ),
    ]
}

fn version_rows() -> Vec<Edge> {
    let one = |source, v: &str, want| edge(source, host(17763), vec![win(v)], want);
    vec![
        one(
            "10.0.17763 without revision: the prefix, the build, equal",
            "10.0.17763",
            [Y, Y, Y, Y, Y, Y, Y],
        ),
        one(
            "10.0.17763. (empty fourth field): the first three fields are read",
            "10.0.17763.",
            [Y, Y, Y, Y, Y, Y, Y],
        ),
        one(
            "10.0.17763.abc: the revision is never parsed to match",
            "10.0.17763.abc",
            [Y, Y, Y, Y, Y, Y, Y],
        ),
        one(
            "leading space: HasPrefix fails; Atoi(\" 10\") and ParseUint refuse it (0.0.0)",
            " 10.0.17763.1",
            [N, N, N, N, N, N, N],
        ),
        one(
            "10.0.177630.1: HasPrefix(\"10.0.177630.1\", \"10.0.17763\") holds (1.6.0 – 1.6.22, 1.7.0 – 1.7.5); \
             Atoi gives 177630, uint16 46558 (1.6.23+, 1.7); ParseUint(_, 10, 16) overflows (2.x)",
            "10.0.177630.1",
            [Y, Y, N, Y, N, N, N],
        ),
        one(
            "10.0.17763x: the prefix holds (to 1.6.22, 1.7.0 – 1.7.5); Atoi(\"17763x\") is an error, build 0",
            "10.0.17763x",
            [Y, Y, N, Y, N, N, N],
        ),
        one(
            "10.0.17763 with a trailing space: the prefix holds; Atoi(\"17763 \") is an error",
            "10.0.17763 ",
            [Y, Y, N, Y, N, N, N],
        ),
        one(
            "10.0.1776: shorter than the host's prefix, another build",
            "10.0.1776",
            [N, N, N, N, N, N, N],
        ),
    ]
}

fn order_rows() -> Vec<Edge> {
    vec![
        edge(
            "[10.0.17763, 10.0.177630.1]: 1.6.0 – 1.6.22 take both by prefix and Less puts the \
             larger revision (1) first: the bogus build wins; 1.7.0 – 1.7.5 keep index order",
            host(17763),
            vec![win("10.0.17763"), win("10.0.177630.1")],
            [Some(1), Some(1), Y, Y, Y, Y, Y],
        ),
        edge(
            "[10.0.17763.abc, 10.0.17763.5]: 1.6 revision(abc) is 0, so .5 wins; 1.7.0+, 2.0 \
             index order; 2.2 compares strings, \"abc\" above \"5\"",
            host(17763),
            vec![win("10.0.17763.abc"), win("10.0.17763.5")],
            [Some(1), Some(1), Some(1), Y, Y, Y, Y],
        ),
    ]
}

#[test]
fn containerd_1_6_edge_cases_per_release() {
    let mut rows = empty_host_rows();
    rows.extend(spelling_rows());
    rows.extend(version_rows());
    rows.extend(order_rows());
    assert_eq!(rows.len(), 20);
    let mut wrong = Vec::new();
    for row in &rows {
        let list: Vec<Candidate> = row.list.iter().cloned().map(entry).collect();
        let got = PROFILES.map(|p| pick(p, &row.host, &list).selected);
        if got != row.want {
            wrong.push(format!(
                "{} (host {}): got {got:?}, want {:?}",
                row.source, row.host, row.want
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// Linux hosts: every containerd normalises the entry (`matcher.Match` after `Normalize`);
/// CRI-O compares strings exactly (containers/image `platform_matcher.go` `MatchesPlatform`).
#[test]
fn linux_spellings_containerd_normalises_cri_o_does_not() {
    // (source, host, entry, [containerd-1.6.18, containerd-2.3, cri-o])
    let rows = [
        (
            "x86_64",
            linux("amd64", None),
            Platform::new("linux", "x86_64"),
            [true, true, false],
        ),
        (
            "OS Linux: normalizeOS lower-cases",
            linux("amd64", None),
            Platform::new("Linux", "amd64"),
            [true, true, false],
        ),
        (
            "OS empty: normalizeOS gives runtime.GOOS",
            linux("amd64", None),
            Platform::new("", "amd64"),
            [true, true, false],
        ),
        (
            "armhf is arm/v7",
            linux("arm", Some("v7")),
            Platform::new("linux", "armhf"),
            [true, true, false],
        ),
        (
            "aarch64 is arm64",
            linux("arm64", None),
            Platform::new("linux", "aarch64"),
            [true, true, false],
        ),
    ];
    for (source, host, entry, want) in rows {
        let got = [
            RuntimeProfile::CONTAINERD_1_6_18,
            RuntimeProfile::CONTAINERD_2_3,
            RuntimeProfile::CRI_O,
        ]
        .map(|p| matches(p, &host, &entry));
        assert_eq!(got, want, "{source}");
    }
}

/// moby `pull_v2_windows.go` `filterManifests` reads the OS with `system.IsOSSupported`
/// (`strings.EqualFold` with `runtime.GOOS`): `Windows` is taken, an empty OS is not.
#[test]
fn docker_reads_the_os_by_equal_fold_not_normalize() {
    let docker = RuntimeProfile::DOCKER_19_03;
    assert!(matches(
        docker,
        &host(17763),
        &on("Windows", "amd64", "10.0.17763.1")
    ));
    assert!(!matches(
        docker,
        &host(17763),
        &on("", "amd64", "10.0.17763.1")
    ));
}

/// `resolve --platform` reads a user's platform as containerd's `platforms.Parse` does
/// (v1.6.20 `platforms.go` `Parse`: `normalizeOS`, `normalizeArch`, arm's default `v7` dropped
/// from `os/arch`, arm64's `v8` added to `os/arch/variant`); the host's `os.version` is the
/// `major.minor.build` a node reports (`DefaultSpec`).
#[test]
fn platform_flags_are_normalised_as_containerd_parses_them() {
    let rows = [
        (
            "Windows/AMD64:10.0.17763",
            "windows",
            "amd64",
            None,
            Some("10.0.17763"),
        ),
        ("linux/x86_64", "linux", "amd64", None, None),
        ("linux/x86-64/v1", "linux", "amd64", None, None),
        ("linux/aarch64", "linux", "arm64", None, None),
        ("linux/aarch64/8", "linux", "arm64", Some("v8"), None),
        ("linux/armhf", "linux", "arm", None, None),
        ("linux/arm/7", "linux", "arm", Some("v7"), None),
        ("linux/armel", "linux", "arm", Some("v6"), None),
        ("LINUX/i386", "linux", "386", None, None),
        (
            "windows/amd64:10.0.17763.1234",
            "windows",
            "amd64",
            None,
            Some("10.0.17763"),
        ),
    ];
    for (flag, os, arch, variant, version) in rows {
        let p = Platform::parse(flag).unwrap();
        assert_eq!(
            (
                p.os.as_str(),
                p.architecture.as_str(),
                p.variant.as_deref(),
                p.os_version.as_deref()
            ),
            (os, arch, variant, version),
            "{flag}"
        );
    }
    // What Parse refuses (a component outside [A-Za-z0-9_-], a wildcard, four parts), and
    // a host os.version that is not MAJOR.MINOR.BUILD[.REVISION] in digits.
    for bad in [
        "linux/*",
        "linux/amd64/v1/x",
        "windows/amd64:10.0.17763.abc",
        "windows/amd64: 10.0.17763",
    ] {
        assert!(Platform::parse(bad).is_err(), "{bad}");
    }
}
