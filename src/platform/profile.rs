//! Runtime profiles as data: one row of [`PROFILES`] per [`RuntimeProfile`], holding what
//! differs between the runtimes imgcheck emulates (`docs/matching.md`, "Runtime profiles") and
//! the containerd releases each profile stands for.
//!
//! Adding a containerd release whose matcher an existing profile already describes is a change
//! to that row's releases; a release with new rules is one new row (a profile is its row: its
//! name, its parsing, its releases and the lists of profiles come from the table), plus the
//! lines the schema and docs must show, which a test names when they are missing.

use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::windows::{BUILD_WS2022, BUILD_WS2025, WindowsVersion, go_revision};

/// Which runtime's matcher to emulate (see `docs/matching.md`): a containerd generation, or
/// CRI-O (containers/image), which runs Linux nodes only. A profile is a row of the profile
/// table, which says the rest; the table's order (the containerd generations oldest first,
/// then CRI-O) is the profiles' order.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RuntimeProfile(u8);

impl RuntimeProfile {
    /// containerd 1.4.0 – 1.4.x: any Windows entry of the architecture, then `linux/amd64`
    /// entries (a Windows node may pull a Linux image).
    pub const CONTAINERD_1_4: RuntimeProfile = named("containerd-1.4");
    /// containerd 1.5.2 – 1.5.x: the prefix rule of 1.6.0, the entry's OS lower-cased.
    pub const CONTAINERD_1_5: RuntimeProfile = named("containerd-1.5");
    /// containerd 1.6.0 – 1.6.17: a Windows entry matches only when its `os.version` starts
    /// with the host's `major.minor.build` (no fallback for entries without one).
    pub const CONTAINERD_1_6_0: RuntimeProfile = named("containerd-1.6.0");
    /// containerd 1.6.18 – 1.6.22: the prefix rule, and entries without `os.version` match
    /// every host (containerd#8106); no LTSC window yet.
    pub const CONTAINERD_1_6_18: RuntimeProfile = named("containerd-1.6.18");
    /// containerd 1.6.23 – 1.6.39.
    pub const CONTAINERD_1_6: RuntimeProfile = named("containerd-1.6");
    /// containerd 1.7.0 – 1.7.5: the prefix rule, and entries without `os.version` match
    /// every host (containerd#8101); no LTSC window before 1.7.6 (containerd#9069).
    pub const CONTAINERD_1_7_0: RuntimeProfile = named("containerd-1.7.0");
    /// containerd 1.7.6 – 1.7.x.
    pub const CONTAINERD_1_7: RuntimeProfile = named("containerd-1.7");
    /// containerd 2.0.x, 2.1.0 – 2.1.5 (containerd/platforms rc.1).
    pub const CONTAINERD_2_0: RuntimeProfile = named("containerd-2.0");
    /// containerd 2.1.6 – 2.2.x (containerd/platforms rc.2).
    pub const CONTAINERD_2_2: RuntimeProfile = named("containerd-2.2");
    /// containerd 2.3.x (containerd/platforms rc.4).
    pub const CONTAINERD_2_3: RuntimeProfile = named("containerd-2.3");
    /// containerd main, unreleased (containerd/platforms rc.5).
    pub const CONTAINERD_NEXT: RuntimeProfile = named("containerd-next");
    /// Docker Engine 19.03 – 24.0 (moby's graphdriver pull, `distribution/pull_v2_windows.go`):
    /// Windows nodes only (dockershim-era Kubernetes nodes).
    pub const DOCKER_19_03: RuntimeProfile = named("docker-19.03");
    /// CRI-O, which pulls through containers/image (`ChooseInstanceByCompression`); Linux
    /// nodes only (OpenShift's Linux runtime).
    pub const CRI_O: RuntimeProfile = named("cri-o");
}

/// The profile whose row is named `name`; a name no row has fails the build.
const fn named(name: &str) -> RuntimeProfile {
    let mut i = 0;
    while i < PROFILES.len() {
        if str_eq(PROFILES[i].name, name) {
            return RuntimeProfile(i as u8);
        }
        i += 1;
    }
    panic!("no row of PROFILES has that name")
}

/// `a == b`, in a constant.
const fn str_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// A containerd version, `(major, minor, patch)`.
pub type ContainerdVersion = (u32, u32, u32);

/// A Docker Engine version, `(major, minor, patch)`: `19.03.14` (reported `docker://19.3.14`)
/// is `(19, 3, 14)`.
pub type DockerVersion = (u32, u32, u32);

/// Any patch release: `(2, 2, X)` is the last 2.2 release, whichever it is.
const X: u32 = u32::MAX;

/// Which runtime a profile is, and for containerd the releases it stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Runtime {
    /// A containerd generation: the releases from `first` to `last` (inclusive) run its rules,
    /// so a node reporting one of them is judged under it.
    Containerd {
        /// The oldest release covered.
        first: ContainerdVersion,
        /// The newest release covered.
        last: ContainerdVersion,
    },
    /// containerd's main branch, unreleased: a node reporting a containerd newer than every
    /// covered release is judged under it.
    ContainerdMain,
    /// Docker Engine's own pull (moby `distribution/pull_v2.go` `pullManifestList` with
    /// `pull_v2_windows.go` `filterManifests`), Windows nodes only: the releases from `first` to
    /// `last` (inclusive) run its rules. Besides the row's columns, moby reads a list as its
    /// own code does: the architecture compared as written with the daemon's `GOARCH`, the
    /// variant not read, an entry without platform never taken (its platform is the zero
    /// value), a child list not walked (`unsupported manifest format`).
    Docker {
        /// The oldest release covered.
        first: DockerVersion,
        /// The newest release covered.
        last: DockerVersion,
    },
    /// CRI-O (containers/image), Linux nodes only.
    CriO,
}

/// The lowest container build a Windows host at or above WS2022 accepts, from the profile's
/// LTSC list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Floor {
    /// The newest LTSC build the host is strictly newer than (WS2022 when there is none).
    NewestBelow,
    /// The newest LTSC build at or below the host, then one LTSC further back.
    OneBack,
}

/// Which of several matching Windows entries wins (`windowsMatchComparer.Less`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Winner {
    /// The highest numeric revision (the fourth field of `os.version`).
    HighestRevision,
    /// The first in index order.
    IndexOrder,
    /// `os.version` compared as a string, descending (entries without one last).
    OsVersionDescending,
    /// Entries whose `os.version` starts with the host's `major.minor.build` and a dot first,
    /// then index order (moby `pull_v2_windows.go` `manifestsByVersion.Less` with
    /// `versionMatch`, under `sort.Stable`): `10.0.17763` alone is not the host's build.
    ExactBuildFirst,
}

/// How the fields of an entry's `os.version` are read as numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum VersionNumbers {
    /// Go's `strconv.Atoi`, errors ignored, cut to the field's width (containerd 1.6, 1.7:
    /// `getOSVersion`): `10.0.+17763` is build 17763.
    Atoi,
    /// Go's `strconv.ParseUint` with the field's width, any error giving 0.0.0
    /// (containerd/platforms `getWindowsOSVersion`, 2.0 and later).
    ParseUint,
}

/// Which Windows entries a host's matcher takes, by `os.version`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum WindowsVersions {
    /// Only entries whose `os.version` starts with the host's `major.minor.build` (containerd
    /// 1.6.0 – 1.6.17 `platforms/defaults_windows.go` `matchComparer.Match`:
    /// `strings.HasPrefix`), so an entry without one matches no host.
    Prefix,
    /// The prefix rule, and entries without `os.version` match every host (containerd 1.6.18
    /// – 1.6.22 `matchComparer.Match`: the fallback of containerd#8106 before the prefix;
    /// the stable-ABI window came in 1.6.23, containerd#8854).
    PrefixOrNone,
    /// Entries the host can run (`checkWindowsHostAndContainerCompat`, the LTSC floor), and
    /// entries without `os.version` (containerd#7431, 1.6.18 and later).
    Compatible,
    /// Every entry whose build is not above the host's (moby `pull_v2_windows.go`
    /// `checkImageCompatibility`: the third dot-separated field read by Go's `strconv.Atoi`;
    /// an entry without one, or whose build does not parse, is kept; major and minor are not
    /// compared). An older build is pulled; whether it then starts is the host's check.
    NotNewer,
    /// Every entry, whatever its `os.version` (containerd 1.4 `platforms.go` `matcher.Match`
    /// compares OS, architecture and variant only); whether the image then starts is the
    /// host's check.
    Any,
}

/// How an entry's OS is compared with a Windows host's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum OsCompare {
    /// As written: `Windows` is not `windows`, nor is an empty OS (containerd 1.6.18 and later
    /// 1.6: v1.6.20 `platforms/defaults_windows.go` `matchComparer.Match`, `p.OS == "windows"`).
    Raw,
    /// After `Normalize` (`database.go` `normalizeOS`): lower-cased, and an empty OS is the
    /// node's own (`runtime.GOOS`).
    Normalized,
    /// moby `system.IsOSSupported`: `strings.EqualFold` with the daemon's `runtime.GOOS`, so
    /// `Windows` is taken and an empty OS is not.
    EqualFold,
}

/// Which entries a Windows host whose platform states no `os.version` takes (a node always
/// states one; a `--platform` or a matcher built from a user's platform may not).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum EmptyHost {
    /// Every entry (the prefix `""` starts every string; containerd/platforms v0.2.1 and later
    /// `m.OSVersion == ""`).
    Every,
    /// Only entries without `os.version` (containerd 1.6.23 – 1.6.39 `matchComparer.Match`:
    /// `GetOsVersion("")` is 0.0.0, whose major no entry's shares).
    Unversioned,
}

/// One row of the profile table.
#[derive(Debug)]
struct ProfileInfo {
    /// The name users type (`runtimes:`, `--runtime`) and reports show.
    name: &'static str,
    /// What its matcher does, in one clause: the reason a node under it is told
    /// (`docs/json-schema.md`, `runtimes[]`).
    why: &'static str,
    /// containerd (which releases) or CRI-O.
    runtime: Runtime,
    /// The "stable ABI" LTSC builds it knows (`compatLTSCReleases`), ascending.
    ltsc: &'static [u16],
    /// How the LTSC list gives a host's floor.
    floor: Floor,
    /// Which of several matching Windows entries wins.
    winner: Winner,
    /// Whether `os.features` is checked (2.3 and later).
    checks_features: bool,
    /// How `os.version` fields are read.
    version_numbers: VersionNumbers,
    /// Which Windows entries match a host, by `os.version`.
    windows_versions: WindowsVersions,
    /// How a Windows entry's OS is compared.
    os_compare: OsCompare,
    /// Which entries a Windows host without `os.version` takes.
    empty_host: EmptyHost,
    /// Whether a platform-less entry's config is checked with the full matcher (containerd
    /// 2.0 and later, `ConfigPlatform` in `core/images/image.go` `Manifest`) rather than by OS
    /// and architecture only (1.6.x, 1.7.x `images/image.go` `Manifest`).
    full_config_check: bool,
    /// Whether a Windows host's matcher also takes `linux/amd64` entries, after every Windows
    /// one (containerd 1.4 `platforms/defaults_windows.go` `Default`): such an image is pulled
    /// and fails at start.
    linux_fallback: bool,
}

/// The profile table: one row per [`RuntimeProfile`], the containerd generations oldest first,
/// then CRI-O. Adding a profile is adding a row here (see `docs/matching.md`, "Adding a
/// profile").
const PROFILES: &[ProfileInfo] = &[
    // containerd v1.4.1 as dageita/frontend-websocket vendors it (commit 2bb8c1357583,
    // vendor/modules.txt `github.com/containerd/containerd v1.4.1`):
    // platforms/defaults_windows.go `Default` is `Ordered(DefaultSpec(), linux/amd64)` (the
    // architecture written as `amd64`, not the host's), over platforms.go `matcher.Match`
    // (OS, architecture, variant after `Normalize`; `os.version` never read); compare.go
    // `orderedPlatformComparer.Less` puts the Windows entries before the Linux ones, ties kept
    // in list order by images/image.go `Manifest` (`sort.SliceStable`, the first one taken).
    ProfileInfo {
        name: "containerd-1.4",
        why: "any Windows entry of the architecture matches (os.version not read), then linux/amd64 entries; the first in index order wins",
        runtime: Runtime::Containerd {
            first: (1, 4, 0),
            last: (1, 4, X),
        },
        // Used at start only (the pull reads no os.version): the host's own check.
        ltsc: &[BUILD_WS2022],
        floor: Floor::NewestBelow,
        winner: Winner::IndexOrder,
        checks_features: false,
        version_numbers: VersionNumbers::Atoi,
        windows_versions: WindowsVersions::Any,
        os_compare: OsCompare::Normalized,
        empty_host: EmptyHost::Every,
        full_config_check: false,
        linux_fallback: true,
    },
    // containerd v1.5.2 as kubernetes/kubernetes vendors it (commit b1c51a58ce46,
    // vendor/modules.txt `github.com/containerd/containerd v1.5.2`):
    // platforms/defaults_windows.go `matchComparer.Match` (the prefix, no fallback) and `Less`
    // (highest `revision`), over platforms.go `matcher.Match`, which normalises the entry.
    ProfileInfo {
        name: "containerd-1.5",
        why: "the os.version prefix is required (no fallback for entries without os.version), the entry's OS lower-cased first",
        runtime: Runtime::Containerd {
            first: (1, 5, 2),
            last: (1, 5, X),
        },
        // The prefix rule decides alone: the LTSC columns are never used.
        ltsc: &[BUILD_WS2022],
        floor: Floor::NewestBelow,
        winner: Winner::HighestRevision,
        checks_features: false,
        version_numbers: VersionNumbers::Atoi,
        windows_versions: WindowsVersions::Prefix,
        os_compare: OsCompare::Normalized,
        empty_host: EmptyHost::Every,
        full_config_check: false,
        linux_fallback: false,
    },
    // containerd 1.6.0 – 1.6.17: platforms/defaults_windows.go `matchComparer.Match` is
    // `defaults.Match(p)` (the entry normalised: `Windows` or an empty OS is the node's
    // `windows`) and then `strings.HasPrefix(p.OSVersion, m.osVersionPrefix)`, the form
    // containerd#6491's diff (2022-02-03, before the v1.6.0 tag) removes on main and v1.5.2
    // vendors; release/1.6 kept it until containerd#8106 rewrote it for 1.6.18 (v1.6.20's
    // text, below). `Less`: the larger `revision` first.
    ProfileInfo {
        name: "containerd-1.6.0",
        why: "the os.version prefix is required (no fallback for entries without os.version before 1.6.18, containerd#7431)",
        runtime: Runtime::Containerd {
            first: (1, 6, 0),
            last: (1, 6, 17),
        },
        // The prefix rule decides alone: the LTSC columns are never used.
        ltsc: &[BUILD_WS2022],
        floor: Floor::NewestBelow,
        winner: Winner::HighestRevision,
        checks_features: false,
        version_numbers: VersionNumbers::Atoi,
        windows_versions: WindowsVersions::Prefix,
        os_compare: OsCompare::Normalized,
        empty_host: EmptyHost::Every,
        full_config_check: false,
        linux_fallback: false,
    },
    // containerd 1.6.18 (its release branch took containerd#8106, 2023-02-15, the day before
    // the tag) – 1.6.22 (releases/v1.6.23.toml: "Add stable ABI support in windows platform
    // matcher", containerd#8854), read in v1.6.20's own source (Debian's
    // golang-github-containerd-containerd-dev 1.6.20~ds1, no patch under platforms/):
    // platforms/defaults_windows.go `matchComparer.Match` takes an entry `defaults.Match`
    // takes whose OS is `windows` as written, when its os.version has the host's prefix or is
    // empty; `Less` unchanged.
    ProfileInfo {
        name: "containerd-1.6.18",
        why: "the os.version prefix is required, entries without os.version match every host (containerd#8106; no LTSC window before 1.6.23)",
        runtime: Runtime::Containerd {
            first: (1, 6, 18),
            last: (1, 6, 22),
        },
        // The prefix rule decides alone: the LTSC columns are never used.
        ltsc: &[BUILD_WS2022],
        floor: Floor::NewestBelow,
        winner: Winner::HighestRevision,
        checks_features: false,
        version_numbers: VersionNumbers::Atoi,
        windows_versions: WindowsVersions::PrefixOrNone,
        os_compare: OsCompare::Raw,
        empty_host: EmptyHost::Every,
        full_config_check: false,
        linux_fallback: false,
    },
    ProfileInfo {
        name: "containerd-1.6",
        why: "a Windows entry needs a build the host can run (LTSC floor 20348) or no os.version; the highest revision wins",
        runtime: Runtime::Containerd {
            first: (1, 6, 23),
            last: (1, 6, 39),
        },
        ltsc: &[BUILD_WS2022],
        floor: Floor::NewestBelow,
        winner: Winner::HighestRevision,
        checks_features: false,
        windows_versions: WindowsVersions::Compatible,
        version_numbers: VersionNumbers::Atoi,
        os_compare: OsCompare::Raw,
        empty_host: EmptyHost::Unversioned,
        full_config_check: false,
        linux_fallback: false,
    },
    // containerd 1.7.0 – 1.7.5: main's `windowsmatcher` as v1.7.0 was cut from it (release
    // notes releases/v1.7.0.toml name main pull requests newer than containerd#8101):
    // platforms/defaults_windows.go `windowsmatcher.Match` takes an entry the default matcher
    // takes (the entry normalised) when the host's OS is `windows` and the entry's os.version
    // has the host's prefix or is empty (containerd#8101, merged on main 2023-02-14, the
    // fallback containerd#8106 took to 1.6.18). containerd#8778's diff (main, 2023-07) shows
    // that form as the one the LTSC window replaced; release/1.7 took the window with
    // containerd#9069 (merged 2023-09-07), which releases/v1.7.6.toml names as new in 1.7.6.
    // `Default` is `Only(DefaultSpec())`: several matches stay in index order (as 1.7.6+).
    ProfileInfo {
        name: "containerd-1.7.0",
        why: "the os.version prefix is required, entries without os.version match every host (containerd#8101; no LTSC window before 1.7.6)",
        runtime: Runtime::Containerd {
            first: (1, 7, 0),
            last: (1, 7, 5),
        },
        // The prefix rule decides alone: the LTSC columns are never used.
        ltsc: &[BUILD_WS2022],
        floor: Floor::NewestBelow,
        winner: Winner::IndexOrder,
        checks_features: false,
        windows_versions: WindowsVersions::PrefixOrNone,
        version_numbers: VersionNumbers::Atoi,
        os_compare: OsCompare::Normalized,
        empty_host: EmptyHost::Every,
        full_config_check: false,
        linux_fallback: false,
    },
    ProfileInfo {
        name: "containerd-1.7",
        why: "a Windows entry needs a build the host can run (LTSC floor 20348) or no os.version; the first in index order wins",
        runtime: Runtime::Containerd {
            first: (1, 7, 6),
            last: (1, 7, X),
        },
        ltsc: &[BUILD_WS2022],
        floor: Floor::NewestBelow,
        winner: Winner::IndexOrder,
        checks_features: false,
        windows_versions: WindowsVersions::Compatible,
        version_numbers: VersionNumbers::Atoi,
        os_compare: OsCompare::Normalized,
        empty_host: EmptyHost::Every,
        full_config_check: false,
        linux_fallback: false,
    },
    ProfileInfo {
        name: "containerd-2.0",
        why: "as 1.7, with os.version read by ParseUint and a platform-less entry's config matched in full (containerd/platforms rc.1)",
        runtime: Runtime::Containerd {
            first: (2, 0, 0),
            last: (2, 1, 5),
        },
        ltsc: &[BUILD_WS2022],
        floor: Floor::NewestBelow,
        winner: Winner::IndexOrder,
        checks_features: false,
        windows_versions: WindowsVersions::Compatible,
        version_numbers: VersionNumbers::ParseUint,
        os_compare: OsCompare::Normalized,
        empty_host: EmptyHost::Every,
        full_config_check: true,
        linux_fallback: false,
    },
    ProfileInfo {
        name: "containerd-2.2",
        why: "the LTSC floor is 26100 for hosts above it; os.version compared as a string, descending, wins (containerd/platforms rc.2)",
        runtime: Runtime::Containerd {
            first: (2, 1, 6),
            last: (2, 2, X),
        },
        ltsc: &[BUILD_WS2022, BUILD_WS2025],
        floor: Floor::NewestBelow,
        winner: Winner::OsVersionDescending,
        checks_features: false,
        windows_versions: WindowsVersions::Compatible,
        version_numbers: VersionNumbers::ParseUint,
        os_compare: OsCompare::Normalized,
        empty_host: EmptyHost::Every,
        full_config_check: true,
        linux_fallback: false,
    },
    ProfileInfo {
        name: "containerd-2.3",
        why: "as 2.2, and os.features are checked (containerd/platforms rc.4)",
        runtime: Runtime::Containerd {
            first: (2, 3, 0),
            last: (2, 3, X),
        },
        ltsc: &[BUILD_WS2022, BUILD_WS2025],
        floor: Floor::NewestBelow,
        winner: Winner::OsVersionDescending,
        checks_features: true,
        windows_versions: WindowsVersions::Compatible,
        version_numbers: VersionNumbers::ParseUint,
        os_compare: OsCompare::Normalized,
        empty_host: EmptyHost::Every,
        full_config_check: true,
        linux_fallback: false,
    },
    ProfileInfo {
        name: "containerd-next",
        why: "containerd main, unreleased (containerd/platforms rc.5): the floor is one LTSC further back than the host's",
        runtime: Runtime::ContainerdMain,
        ltsc: &[BUILD_WS2022, BUILD_WS2025],
        floor: Floor::OneBack,
        winner: Winner::OsVersionDescending,
        checks_features: true,
        windows_versions: WindowsVersions::Compatible,
        version_numbers: VersionNumbers::ParseUint,
        os_compare: OsCompare::Normalized,
        empty_host: EmptyHost::Every,
        full_config_check: true,
        linux_fallback: false,
    },
    ProfileInfo {
        name: "docker-19.03",
        why: "Docker Engine pulls the first Windows entry whose build is not above the host's, the host's own build first (moby pull_v2_windows.go filterManifests)",
        runtime: Runtime::Docker {
            first: (19, 3, 0),
            last: (24, 0, X),
        },
        // Used at start only (the pull keeps every build not above the host's): the host's
        // own check, Microsoft's matrix, which the daemon leaves to HCS.
        ltsc: &[BUILD_WS2022],
        floor: Floor::NewestBelow,
        winner: Winner::ExactBuildFirst,
        checks_features: false,
        windows_versions: WindowsVersions::NotNewer,
        version_numbers: VersionNumbers::Atoi,
        os_compare: OsCompare::EqualFold,
        empty_host: EmptyHost::Every,
        // Never used: an entry without platform is never a candidate (`Runtime::Docker`).
        full_config_check: false,
        linux_fallback: false,
    },
    ProfileInfo {
        name: "cri-o",
        why: "CRI-O pulls through containers/image (ChooseInstanceByCompression), Linux nodes only",
        runtime: Runtime::CriO,
        // CRI-O runs no Windows node: the Windows columns are never used.
        ltsc: &[BUILD_WS2022],
        floor: Floor::NewestBelow,
        winner: Winner::IndexOrder,
        checks_features: false,
        windows_versions: WindowsVersions::Compatible,
        version_numbers: VersionNumbers::ParseUint,
        os_compare: OsCompare::Normalized,
        empty_host: EmptyHost::Every,
        full_config_check: true,
        linux_fallback: false,
    },
];

// A profile is its row's index: the table must fit the index's type.
const _: () = assert!(PROFILES.len() <= u8::MAX as usize);

/// Whether a row is a containerd generation (released or not).
const fn is_containerd(runtime: &Runtime) -> bool {
    matches!(
        runtime,
        Runtime::Containerd { .. } | Runtime::ContainerdMain
    )
}

/// How many rows are containerd generations (released or not).
const CONTAINERD_ROWS: usize = {
    let mut n = 0;
    let mut i = 0;
    while i < PROFILES.len() {
        if is_containerd(&PROFILES[i].runtime) {
            n += 1;
        }
        i += 1;
    }
    n
};

/// How a node's containerd version was mapped to a profile ([`RuntimeProfile::of_containerd`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mapping {
    /// A row covers the release.
    Covered,
    /// No row covers it; the next newer row of its `major.minor` series is the nearest.
    NearestNewer,
    /// No row covers it, none of its series is newer; the newest older row of the series is.
    NearestOlder,
    /// Its series is older than every row (containerd 1.3 and before): the oldest profile,
    /// containerd 1.4's, whose matcher theirs is not checked against (`docs/matching.md`).
    OlderThanEveryRow,
    /// No row of its series, and it is not older than every row: containerd main's profile.
    Main,
}

/// The rows with releases, in the table's order, with their first and last release.
fn released() -> Vec<(RuntimeProfile, ContainerdVersion, ContainerdVersion)> {
    RuntimeProfile::ALL
        .into_iter()
        .filter_map(|p| p.releases().map(|(first, last)| (p, first, last)))
        .collect()
}

impl RuntimeProfile {
    /// Every profile: the containerd generations oldest first, then CRI-O.
    pub const ALL: [RuntimeProfile; PROFILES.len()] = {
        let mut all = [RuntimeProfile(0); PROFILES.len()];
        let mut i = 0;
        while i < PROFILES.len() {
            all[i] = RuntimeProfile(i as u8);
            i += 1;
        }
        all
    };

    /// The containerd generations, oldest first: with the Docker Engine rows, the profiles
    /// that run Windows nodes.
    pub const CONTAINERD: [RuntimeProfile; CONTAINERD_ROWS] = {
        let mut all = [RuntimeProfile(0); CONTAINERD_ROWS];
        let (mut i, mut n) = (0, 0);
        while i < PROFILES.len() {
            if is_containerd(&PROFILES[i].runtime) {
                all[n] = RuntimeProfile(i as u8);
                n += 1;
            }
            i += 1;
        }
        all
    };

    /// The default: the newest released containerd (the last row with releases).
    pub const DEFAULT: RuntimeProfile = {
        let mut newest = None;
        let mut i = 0;
        while i < PROFILES.len() {
            if matches!(PROFILES[i].runtime, Runtime::Containerd { .. }) {
                newest = Some(RuntimeProfile(i as u8));
            }
            i += 1;
        }
        match newest {
            Some(p) => p,
            None => panic!("no released containerd in PROFILES"),
        }
    };

    /// The profile's row of [`PROFILES`].
    fn info(self) -> &'static ProfileInfo {
        &PROFILES[self.0 as usize]
    }

    /// The profile's name as users type it.
    pub fn name(self) -> &'static str {
        self.info().name
    }

    /// Whether the runtime pulls from one list level only: a selected entry that is itself a
    /// list is refused, not descended into (CRI-O: containers/image).
    pub fn one_list_level(self) -> bool {
        self.info().runtime == Runtime::CriO
    }

    /// Whether the runtime reads a selected entry's media type from the registry's answer
    /// (the body's own) rather than from the list's descriptor, so a descriptor naming another
    /// kind than the body is no refusal (CRI-O: containers/image `docker_image_src.go`
    /// `GetManifest`, then `manifest.FromBlob` with that type); containerd checks the body
    /// against the descriptor (`images/image.go` `validateMediaType`).
    pub fn reads_served_type(self) -> bool {
        self.info().runtime == Runtime::CriO
    }

    /// Whether the runtime runs Windows nodes (every containerd generation and Docker Engine
    /// row; not CRI-O).
    pub fn runs_windows(self) -> bool {
        self.info().runtime != Runtime::CriO
    }

    /// Whether the profile is Docker Engine's (moby's) pull, which models Windows nodes only.
    pub fn is_docker(self) -> bool {
        matches!(self.info().runtime, Runtime::Docker { .. })
    }

    /// The profile of a node reporting Docker Engine `version`: the row whose moby releases
    /// cover it, or `None` when no row does (a release whose code was not read).
    pub fn of_docker(version: DockerVersion) -> Option<RuntimeProfile> {
        RuntimeProfile::ALL
            .into_iter()
            .find(|p| match p.info().runtime {
                Runtime::Docker { first, last } => (first..=last).contains(&version),
                _ => false,
            })
    }

    /// The moby releases the Docker Engine rows cover, oldest first, as `first – last` texts
    /// (`19.03 – 24.0`) for messages.
    pub fn docker_releases() -> Vec<String> {
        let text = |(major, minor, _): DockerVersion| format!("{major}.{minor:02}");
        PROFILES
            .iter()
            .filter_map(|row| match row.runtime {
                Runtime::Docker { first, last } => {
                    Some(format!("{} – {}", text(first), text(last)))
                }
                _ => None,
            })
            .collect()
    }

    /// The profile of a node reporting containerd `version`, and how it was mapped: the row
    /// that covers the release; else the nearest row of the same `major.minor` series (the
    /// next newer one first: a gap between two rows of a series is judged under the newer);
    /// else, for a series older than every row, the oldest profile; else containerd main's
    /// (`containerd-next`).
    pub fn of_containerd(version: ContainerdVersion) -> (RuntimeProfile, Mapping) {
        let released = released();
        if let Some((p, ..)) = released
            .iter()
            .find(|(_, first, last)| (*first..=*last).contains(&version))
        {
            return (*p, Mapping::Covered);
        }
        let series = (version.0, version.1);
        let in_series =
            |(_, first, last): &&(RuntimeProfile, ContainerdVersion, ContainerdVersion)| {
                ((first.0, first.1)..=(last.0, last.1)).contains(&series)
            };
        let newer = released
            .iter()
            .filter(in_series)
            .find(|(_, first, _)| *first > version);
        if let Some((p, ..)) = newer {
            return (*p, Mapping::NearestNewer);
        }
        let older = released
            .iter()
            .filter(in_series)
            .rfind(|(_, _, last)| *last < version);
        if let Some((p, ..)) = older {
            return (*p, Mapping::NearestOlder);
        }
        let (oldest, first, _) = released[0];
        if series < (first.0, first.1) {
            return (oldest, Mapping::OlderThanEveryRow);
        }
        let main = RuntimeProfile::ALL
            .into_iter()
            .find(|p| p.info().runtime == Runtime::ContainerdMain)
            .expect("a containerd main row");
        (main, Mapping::Main)
    }

    /// The containerd releases the profile covers, `(first, last)` (`u32::MAX` as the patch:
    /// any); `None` for containerd main, Docker Engine and CRI-O.
    pub fn releases(self) -> Option<(ContainerdVersion, ContainerdVersion)> {
        match self.info().runtime {
            Runtime::Containerd { first, last } => Some((first, last)),
            Runtime::ContainerdMain | Runtime::Docker { .. } | Runtime::CriO => None,
        }
    }

    /// What the profile's matcher does, in one clause (the row's `why`).
    pub fn why(self) -> &'static str {
        self.info().why
    }

    /// Whether a Windows entry matches only when its `os.version` starts with the host's
    /// `major.minor.build` (containerd 1.6.0 – 1.6.17), rather than by compatibility.
    pub(super) fn windows_prefix_only(self) -> bool {
        self.info().windows_versions == WindowsVersions::Prefix
    }

    /// Whether a Windows entry matches when its `os.version` starts with the host's
    /// `major.minor.build` or it has none (containerd 1.6.18 – 1.6.22).
    pub(super) fn windows_prefix_or_none(self) -> bool {
        self.info().windows_versions == WindowsVersions::PrefixOrNone
    }

    /// Whether a Windows entry matches when its build is not above the host's (moby), rather
    /// than by compatibility or prefix.
    pub(super) fn windows_not_newer(self) -> bool {
        self.info().windows_versions == WindowsVersions::NotNewer
    }

    /// Whether a Windows entry matches whatever its `os.version` (containerd 1.4).
    pub(super) fn windows_any_version(self) -> bool {
        self.info().windows_versions == WindowsVersions::Any
    }

    /// Whether a Windows host's matcher takes `linux/amd64` entries after the Windows ones
    /// (containerd 1.4).
    pub(super) fn linux_fallback(self) -> bool {
        self.info().linux_fallback
    }

    /// Whether a platform-less entry's config is checked with the full matcher rather than
    /// by OS and architecture only.
    pub(super) fn full_config_check(self) -> bool {
        self.info().full_config_check
    }

    /// The lowest container build a Windows host at or above WS2022 accepts.
    fn floor(self, host_build: u16) -> u16 {
        let ltsc = self.info().ltsc;
        match self.info().floor {
            Floor::NewestBelow => ltsc
                .iter()
                .rev()
                .find(|&&build| host_build > build)
                .copied()
                .unwrap_or(BUILD_WS2022),
            Floor::OneBack => {
                let newest = ltsc
                    .iter()
                    .rposition(|&build| build <= host_build)
                    .unwrap_or(0);
                ltsc[newest.saturating_sub(1)]
            }
        }
    }

    /// `checkWindowsHostAndContainerCompat`: can a host of this version run a container
    /// image of that version (process isolation)?
    pub fn compatible(self, host: WindowsVersion, ctr: WindowsVersion) -> bool {
        if host.major != ctr.major || host.minor != ctr.minor {
            return false;
        }
        if host.build < BUILD_WS2022 {
            return host.build == ctr.build;
        }
        self.floor(host.build) <= ctr.build && ctr.build <= host.build
    }

    /// An entry's `os.version` read as this profile's containerd reads it; 0.0.0 (which no host
    /// accepts) when it does not parse.
    pub fn windows_version(self, s: &str) -> WindowsVersion {
        match self.info().version_numbers {
            VersionNumbers::Atoi => WindowsVersion::parse_atoi(s),
            VersionNumbers::ParseUint => WindowsVersion::parse(s).unwrap_or(WindowsVersion::ZERO),
        }
    }

    /// Whether a Windows host's matcher takes an entry whose OS is written `os`: containerd
    /// 1.6.18 and later 1.6 compare it as written, other containerd releases after
    /// `normalizeOS` (lower-cased; empty is the node's own, `windows`), Docker with
    /// `strings.EqualFold`.
    pub fn windows_os_matches(self, os: &str) -> bool {
        match self.info().os_compare {
            OsCompare::Raw => os == "windows",
            OsCompare::Normalized => os.is_empty() || os.eq_ignore_ascii_case("windows"),
            OsCompare::EqualFold => os.eq_ignore_ascii_case("windows"),
        }
    }

    /// Whether a Windows host without `os.version` takes entries that state one (every
    /// profile but `containerd-1.6`, whose 1.6.23 – 1.6.39 read the empty host as 0.0.0).
    pub(super) fn empty_host_takes_every_entry(self) -> bool {
        self.info().empty_host == EmptyHost::Every
    }

    /// Whether the profile checks `os.features` (2.3 and later).
    pub fn checks_features(self) -> bool {
        self.info().checks_features
    }

    /// Orders two matching Windows entries by their `os.version` for a host of version
    /// `host` (`major.minor.build`): `Less` means `a` is preferred.
    pub(super) fn prefer(self, host: &str, a: Option<&str>, b: Option<&str>) -> Ordering {
        match self.info().winner {
            Winner::ExactBuildFirst => {
                let exact = |v: Option<&str>| {
                    v.and_then(|v| v.strip_prefix(host))
                        .is_some_and(|rest| rest.starts_with('.'))
                };
                exact(b).cmp(&exact(a))
            }
            Winner::HighestRevision => {
                let rev = |v: Option<&str>| v.map_or(0, go_revision);
                rev(b).cmp(&rev(a))
            }
            Winner::IndexOrder => Ordering::Equal,
            Winner::OsVersionDescending => b.unwrap_or("").cmp(a.unwrap_or("")),
        }
    }
}

impl FromStr for RuntimeProfile {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        RuntimeProfile::ALL
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| {
                let names: Vec<_> = RuntimeProfile::ALL.iter().map(|p| p.name()).collect();
                format!(
                    "unknown runtime profile '{s}' (known: {})",
                    names.join(", ")
                )
            })
    }
}

impl fmt::Debug for RuntimeProfile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl fmt::Display for RuntimeProfile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for RuntimeProfile {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for RuntimeProfile {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    #[test]
    fn the_table_has_one_row_per_profile_with_a_unique_name() {
        assert_eq!(RuntimeProfile::ALL.len(), PROFILES.len());
        for (i, p) in RuntimeProfile::ALL.into_iter().enumerate() {
            assert_eq!(p.info().name, PROFILES[i].name);
            assert_eq!(p.name().parse::<RuntimeProfile>(), Ok(p));
        }
        let names: BTreeSet<&str> = PROFILES.iter().map(|r| r.name).collect();
        assert_eq!(names.len(), PROFILES.len());
        // The Windows runtimes are the containerd rows, in order; CRI-O comes last.
        let containerd: Vec<_> = RuntimeProfile::ALL
            .into_iter()
            .filter(|p| p.runs_windows() && !p.is_docker())
            .collect();
        assert_eq!(containerd, RuntimeProfile::CONTAINERD);
        assert_eq!(RuntimeProfile::ALL.last(), Some(&RuntimeProfile::CRI_O));
        assert!(!RuntimeProfile::CRI_O.runs_windows());
        assert_eq!(RuntimeProfile::DEFAULT, RuntimeProfile::CONTAINERD_2_3);
        for row in PROFILES {
            assert!(
                row.ltsc.is_sorted() && row.ltsc[0] == BUILD_WS2022,
                "{row:?}"
            );
        }
    }

    /// The files that must list the profiles do, in the table's order: a new row fails here,
    /// naming the file and the row, until they say it too.
    #[test]
    fn every_row_is_in_the_schema_and_the_docs() {
        let schema: serde_json::Value =
            serde_json::from_str(include_str!("../../docs/report.schema.json")).unwrap();
        let listed: Vec<&str> = schema["$defs"]["runtimeProfile"]["enum"]
            .as_array()
            .expect("docs/report.schema.json: $defs.runtimeProfile.enum")
            .iter()
            .filter_map(|v| v.as_str())
            .collect();
        let names: Vec<&str> = RuntimeProfile::ALL.map(RuntimeProfile::name).to_vec();
        for name in &names {
            assert!(
                listed.contains(name),
                "docs/report.schema.json: $defs.runtimeProfile.enum lacks profile {name}"
            );
        }
        assert_eq!(
            listed, names,
            "docs/report.schema.json: runtimeProfile enum"
        );
        let released = |p: &RuntimeProfile| {
            matches!(
                p.info().runtime,
                Runtime::Containerd { .. } | Runtime::Docker { .. }
            )
        };
        let windows: Vec<RuntimeProfile> = RuntimeProfile::ALL
            .into_iter()
            .filter(|p| p.runs_windows())
            .collect();
        let docs: [(&str, &str, &str, &[RuntimeProfile]); 4] = [
            (
                "docs/usage.md",
                include_str!("../../docs/usage.md"),
                "| `{}` |",
                &RuntimeProfile::ALL,
            ),
            (
                "docs/matching.md",
                include_str!("../../docs/matching.md"),
                "| `{}` |",
                &windows,
            ),
            (
                "docs/json-schema.md",
                include_str!("../../docs/json-schema.md"),
                "`{}`",
                &RuntimeProfile::ALL,
            ),
            (
                "docs/cluster.md",
                include_str!("../../docs/cluster.md"),
                "| `{}`",
                &RuntimeProfile::ALL
                    .into_iter()
                    .filter(released)
                    .collect::<Vec<_>>(),
            ),
        ];
        for (file, text, shape, profiles) in docs {
            for p in profiles {
                let want = shape.replace("{}", p.name());
                assert!(text.contains(&want), "{file}: no `{want}` for profile {p}");
            }
        }
    }

    #[test]
    fn released_rows_are_ascending_and_do_not_overlap() {
        let ranges: Vec<_> = PROFILES
            .iter()
            .filter_map(|row| match row.runtime {
                Runtime::Containerd { first, last } => Some((first, last)),
                _ => None,
            })
            .collect();
        for (first, last) in &ranges {
            assert!(first <= last);
        }
        for pair in ranges.windows(2) {
            assert!(pair[0].1 < pair[1].0, "{pair:?}");
        }
    }
}
