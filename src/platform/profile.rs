//! Runtime profiles as data: one row of [`PROFILES`] per [`RuntimeProfile`], holding what
//! differs between the runtimes imgcheck emulates (`docs/matching.md`, "Runtime profiles") and
//! the containerd releases each profile stands for.
//!
//! Adding a containerd release whose matcher an existing profile already describes is a change
//! to that row's releases; a release with new rules is one variant of [`RuntimeProfile`] and
//! one row, in the same place of both (a compile-time check holds the table to the declaration
//! order).

use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::windows::{BUILD_WS2022, BUILD_WS2025, WindowsVersion, go_revision};

/// Which runtime's matcher to emulate (see `docs/matching.md`): a containerd generation, or
/// CRI-O (containers/image), which runs Linux nodes only. Its row of the profile table says
/// the rest; declaration order is the table's order: the containerd generations oldest first,
/// then CRI-O.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RuntimeProfile {
    /// containerd 1.6.0 – 1.6.17: a Windows entry matches only when its `os.version` starts
    /// with the host's `major.minor.build` (no fallback for entries without one).
    Containerd16Early,
    /// containerd 1.6.23 – 1.6.39.
    Containerd16,
    /// containerd 1.7.x.
    Containerd17,
    /// containerd 2.0.x, 2.1.0 – 2.1.5 (containerd/platforms rc.1).
    Containerd20,
    /// containerd 2.1.6 – 2.2.x (containerd/platforms rc.2).
    Containerd22,
    /// containerd 2.3.x (containerd/platforms rc.4), the newest release.
    Containerd23,
    /// containerd main, unreleased (containerd/platforms rc.5).
    ContainerdNext,
    /// CRI-O, which pulls through containers/image (`ChooseInstanceByCompression`); Linux
    /// nodes only (OpenShift's Linux runtime).
    CriO,
}

/// A containerd version, `(major, minor, patch)`.
pub type ContainerdVersion = (u32, u32, u32);

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
    /// 1.6.0 – 1.6.17 `platforms/defaults_windows.go` `windowsmatcher.Match`:
    /// `strings.HasPrefix`), so an entry without one matches no host.
    Prefix,
    /// Entries the host can run (`checkWindowsHostAndContainerCompat`, the LTSC floor), and
    /// entries without `os.version` (containerd#7431, 1.6.18 and later).
    Compatible,
}

/// How an entry's OS is compared with a Windows host's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum OsCompare {
    /// As written: `Windows` is not `windows` (containerd 1.6).
    Raw,
    /// After `Normalize`, which lower-cases it.
    Normalized,
}

/// One row of the profile table.
#[derive(Debug)]
struct ProfileInfo {
    /// The profile the row describes (its place in the table is its declaration order).
    profile: RuntimeProfile,
    /// The name users type (`runtimes:`, `--runtime`) and reports show.
    name: &'static str,
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
    /// Whether a platform-less entry's config is checked with the full matcher (containerd
    /// 2.0 and later, `ConfigPlatform` in `core/images/image.go` `Manifest`) rather than by OS
    /// and architecture only (1.6.x, 1.7.x `images/image.go` `Manifest`).
    full_config_check: bool,
}

/// The profile table: one row per [`RuntimeProfile`], in declaration order.
const PROFILES: &[ProfileInfo] = &[
    ProfileInfo {
        profile: RuntimeProfile::Containerd16Early,
        name: "containerd-1.6.0",
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
        os_compare: OsCompare::Raw,
        full_config_check: false,
    },
    ProfileInfo {
        profile: RuntimeProfile::Containerd16,
        name: "containerd-1.6",
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
        full_config_check: false,
    },
    ProfileInfo {
        profile: RuntimeProfile::Containerd17,
        name: "containerd-1.7",
        runtime: Runtime::Containerd {
            first: (1, 7, 0),
            last: (1, 7, X),
        },
        ltsc: &[BUILD_WS2022],
        floor: Floor::NewestBelow,
        winner: Winner::IndexOrder,
        checks_features: false,
        windows_versions: WindowsVersions::Compatible,
        version_numbers: VersionNumbers::Atoi,
        os_compare: OsCompare::Normalized,
        full_config_check: false,
    },
    ProfileInfo {
        profile: RuntimeProfile::Containerd20,
        name: "containerd-2.0",
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
        full_config_check: true,
    },
    ProfileInfo {
        profile: RuntimeProfile::Containerd22,
        name: "containerd-2.2",
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
        full_config_check: true,
    },
    ProfileInfo {
        profile: RuntimeProfile::Containerd23,
        name: "containerd-2.3",
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
        full_config_check: true,
    },
    ProfileInfo {
        profile: RuntimeProfile::ContainerdNext,
        name: "containerd-next",
        runtime: Runtime::ContainerdMain,
        ltsc: &[BUILD_WS2022, BUILD_WS2025],
        floor: Floor::OneBack,
        winner: Winner::OsVersionDescending,
        checks_features: true,
        windows_versions: WindowsVersions::Compatible,
        version_numbers: VersionNumbers::ParseUint,
        os_compare: OsCompare::Normalized,
        full_config_check: true,
    },
    ProfileInfo {
        profile: RuntimeProfile::CriO,
        name: "cri-o",
        runtime: Runtime::CriO,
        // CRI-O runs no Windows node: the Windows columns are never used.
        ltsc: &[BUILD_WS2022],
        floor: Floor::NewestBelow,
        winner: Winner::IndexOrder,
        checks_features: false,
        windows_versions: WindowsVersions::Compatible,
        version_numbers: VersionNumbers::ParseUint,
        os_compare: OsCompare::Normalized,
        full_config_check: true,
    },
];

// Row `i` describes the profile declared `i`-th, so a profile finds its row by its
// discriminant.
const _: () = {
    let mut i = 0;
    while i < PROFILES.len() {
        assert!(
            PROFILES[i].profile as usize == i,
            "PROFILES is not in RuntimeProfile's declaration order"
        );
        i += 1;
    }
};

/// How many rows are containerd generations (released or not).
const CONTAINERD_ROWS: usize = {
    let mut n = 0;
    let mut i = 0;
    while i < PROFILES.len() {
        if !matches!(PROFILES[i].runtime, Runtime::CriO) {
            n += 1;
        }
        i += 1;
    }
    n
};

impl RuntimeProfile {
    /// Every profile: the containerd generations oldest first, then CRI-O.
    pub const ALL: [RuntimeProfile; PROFILES.len()] = {
        let mut all = [RuntimeProfile::CriO; PROFILES.len()];
        let mut i = 0;
        while i < PROFILES.len() {
            all[i] = PROFILES[i].profile;
            i += 1;
        }
        all
    };

    /// The containerd generations, oldest first: the profiles that run Windows nodes.
    pub const CONTAINERD: [RuntimeProfile; CONTAINERD_ROWS] = {
        let mut all = [RuntimeProfile::CriO; CONTAINERD_ROWS];
        let (mut i, mut n) = (0, 0);
        while i < PROFILES.len() {
            if !matches!(PROFILES[i].runtime, Runtime::CriO) {
                all[n] = PROFILES[i].profile;
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
                newest = Some(PROFILES[i].profile);
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
        &PROFILES[self as usize]
    }

    /// The profile's name as users type it.
    pub fn name(self) -> &'static str {
        self.info().name
    }

    /// Whether the runtime runs Windows nodes (every containerd generation; not CRI-O).
    pub fn runs_windows(self) -> bool {
        self.info().runtime != Runtime::CriO
    }

    /// The profile of a node reporting containerd `version`, and whether a profile covers
    /// that release. When none does: the nearest row of the same `major.minor` series (the
    /// next newer one first: a gap between two rows of a series is judged under the newer);
    /// else, for a series older than every row, the oldest profile; else containerd main's
    /// (`containerd-next`).
    pub fn of_containerd(version: ContainerdVersion) -> (RuntimeProfile, bool) {
        let released: Vec<_> = PROFILES
            .iter()
            .filter_map(|row| match row.runtime {
                Runtime::Containerd { first, last } => Some((row.profile, first, last)),
                Runtime::ContainerdMain | Runtime::CriO => None,
            })
            .collect();
        if let Some((p, ..)) = released
            .iter()
            .find(|(_, first, last)| (*first..=*last).contains(&version))
        {
            return (*p, true);
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
        let older = released
            .iter()
            .filter(in_series)
            .rfind(|(_, _, last)| *last < version);
        if let Some((p, ..)) = newer.or(older) {
            return (*p, false);
        }
        let (oldest, first, _) = released[0];
        if series < (first.0, first.1) {
            return (oldest, false);
        }
        let main = PROFILES
            .iter()
            .find(|row| row.runtime == Runtime::ContainerdMain)
            .expect("a containerd main row");
        (main.profile, false)
    }

    /// Whether a Windows entry matches only when its `os.version` starts with the host's
    /// `major.minor.build` (containerd 1.6.0 – 1.6.17), rather than by compatibility.
    pub(super) fn windows_prefix_only(self) -> bool {
        self.info().windows_versions == WindowsVersions::Prefix
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
    /// 1.6 compares it as written, later releases after lower-casing it.
    pub fn windows_os_matches(self, os: &str) -> bool {
        match self.info().os_compare {
            OsCompare::Raw => os == "windows",
            OsCompare::Normalized => os.eq_ignore_ascii_case("windows"),
        }
    }

    /// Whether the profile checks `os.features` (2.3 and later).
    pub fn checks_features(self) -> bool {
        self.info().checks_features
    }

    /// Orders two matching Windows entries by their `os.version`: `Less` means `a` is
    /// preferred.
    pub(super) fn prefer(self, a: Option<&str>, b: Option<&str>) -> Ordering {
        match self.info().winner {
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
    use RuntimeProfile::*;

    #[test]
    fn the_table_has_one_row_per_profile_with_a_unique_name() {
        // Exhaustive: a new variant fails to compile here until it gets a place; its row in
        // PROFILES (hence ALL) must sit at that place.
        let position = |p: RuntimeProfile| match p {
            Containerd16Early => 0,
            Containerd16 => 1,
            Containerd17 => 2,
            Containerd20 => 3,
            Containerd22 => 4,
            Containerd23 => 5,
            ContainerdNext => 6,
            CriO => 7,
        };
        assert_eq!(PROFILES.len(), 8);
        for (i, row) in PROFILES.iter().enumerate() {
            assert_eq!(position(row.profile), i, "{row:?}");
            assert_eq!(RuntimeProfile::ALL[i], row.profile);
        }
        let names: BTreeSet<&str> = PROFILES.iter().map(|r| r.name).collect();
        assert_eq!(names.len(), PROFILES.len());
        assert_eq!(RuntimeProfile::CONTAINERD.len(), 7);
        assert!(RuntimeProfile::CONTAINERD.iter().all(|p| p.runs_windows()));
        assert!(!CriO.runs_windows());
        assert_eq!(RuntimeProfile::DEFAULT, Containerd23);
        for row in PROFILES {
            assert!(
                row.ltsc.is_sorted() && row.ltsc[0] == BUILD_WS2022,
                "{row:?}"
            );
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
