//! Why a node is judged under its runtime profile: the profile its reported runtime maps to
//! ([`RuntimeProfile::of_containerd`]) and the reason, made of how the version was mapped
//! (covered by a row, the nearest newer or older row of its series, older than every row, or
//! containerd main's) and what the row's matcher does (its `why`).

use super::profile::{ContainerdVersion, Mapping, RuntimeProfile};

/// The profile a node's runtime is judged under, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuntimeChoice {
    /// The profile.
    pub profile: RuntimeProfile,
    /// How the version was mapped to it ([`Mapping::Covered`] for CRI-O).
    pub mapping: Mapping,
    /// One line: the version, how it was mapped, what the profile's matcher does
    /// (`containerd 1.6.6 is in 1.6.0–1.6.17: the os.version prefix is required …`).
    pub reason: String,
}

impl RuntimeChoice {
    /// The profile of containerd `version` and why.
    pub fn containerd(version: ContainerdVersion) -> RuntimeChoice {
        let (profile, mapping) = RuntimeProfile::of_containerd(version);
        let v = release(version);
        let why = profile.why();
        let series = format!("{}.{}", version.0, version.1);
        let reason = match mapping {
            Mapping::Covered => {
                let covers = profile.releases().map_or(String::new(), span);
                format!("containerd {v} is in {covers}: {why}")
            }
            Mapping::NearestNewer | Mapping::NearestOlder => {
                let side = match mapping {
                    Mapping::NearestNewer => "newer",
                    _ => "older",
                };
                format!(
                    "containerd {v}: no profile covers {}; judged as {profile}, the nearest {side} row of the {series} series: {why}",
                    gap(version)
                )
            }
            Mapping::OlderThanEveryRow => {
                let covers = profile.releases().map_or(String::new(), span);
                format!(
                    "containerd {v}: older than every profile (its matcher is not modelled); judged as {profile}, the oldest profile ({covers}): {why}"
                )
            }
            Mapping::Main => {
                let newest = RuntimeProfile::ALL
                    .into_iter()
                    .filter_map(RuntimeProfile::releases)
                    .next_back();
                let how = match newest {
                    Some((_, last)) if version > last => format!(
                        "newer than every release a profile covers (the newest: {})",
                        release(last)
                    ),
                    _ => format!("no profile covers the {series} series"),
                };
                format!("containerd {v}: {how}; judged as {profile}: {why}")
            }
        };
        RuntimeChoice {
            profile,
            mapping,
            reason,
        }
    }

    /// A profile taken as reported (CRI-O): `name` is the runtime's name as the node writes
    /// it, `version` its version.
    pub fn as_reported(profile: RuntimeProfile, name: &str, version: &str) -> RuntimeChoice {
        RuntimeChoice {
            profile,
            mapping: Mapping::Covered,
            reason: format!("{name} {version}: {}", profile.why()),
        }
    }

    /// The note a run prints about the mapping: the reason, when no row covers the version.
    pub fn note(&self) -> Option<&str> {
        (self.mapping != Mapping::Covered).then_some(self.reason.as_str())
    }
}

/// `1.6.6`; a patch of `u32::MAX` (any) is `x`.
fn release((major, minor, patch): ContainerdVersion) -> String {
    match patch {
        u32::MAX => format!("{major}.{minor}.x"),
        _ => format!("{major}.{minor}.{patch}"),
    }
}

/// A row's releases: `1.6.0–1.6.17`, `2.1.6–2.2.x`, or `1.7.x` for a whole series.
fn span((first, last): (ContainerdVersion, ContainerdVersion)) -> String {
    if first.2 == 0 && last.2 == u32::MAX && (first.0, first.1) == (last.0, last.1) {
        return release(last);
    }
    format!("{}–{}", release(first), release(last))
}

/// The releases of `version`'s series no row covers around it: `1.6.18–1.6.22`, or
/// `1.6.40 and later` when no row of the series is newer.
fn gap(version: ContainerdVersion) -> String {
    let rows: Vec<_> = RuntimeProfile::ALL
        .into_iter()
        .filter_map(RuntimeProfile::releases)
        .collect();
    let same = |v: ContainerdVersion| (v.0, v.1) == (version.0, version.1);
    let below = rows.iter().map(|r| r.1).filter(|&l| l < version).max();
    let lo = match below {
        Some(last) if same(last) => last.2 + 1,
        _ => 0,
    };
    let above = rows.iter().map(|r| r.0).filter(|&f| f > version).min();
    let (major, minor) = (version.0, version.1);
    match above {
        Some(first) if same(first) && first.2 - 1 > lo => {
            format!("{major}.{minor}.{lo}–{major}.{minor}.{}", first.2 - 1)
        }
        Some(first) if same(first) => format!("{major}.{minor}.{lo}"),
        _ => format!("{major}.{minor}.{lo} and later"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each way a version maps, with the reason a node reporting it is told (the rows'
    /// releases and `why` are those of `profile.rs`): (version, profile, mapping, the
    /// reason's beginning).
    const MAPPINGS: &[(ContainerdVersion, &str, Mapping, &str)] = &[
        (
            (1, 6, 6),
            "containerd-1.6.0",
            Mapping::Covered,
            "containerd 1.6.6 is in 1.6.0–1.6.17: the os.version prefix is required (no fallback for entries without os.version before 1.6.18, containerd#7431)",
        ),
        (
            (1, 7, 27),
            "containerd-1.7",
            Mapping::Covered,
            "containerd 1.7.27 is in 1.7.6–1.7.x: a Windows entry needs",
        ),
        (
            (1, 7, 5),
            "containerd-1.7.0",
            Mapping::Covered,
            "containerd 1.7.5 is in 1.7.0–1.7.5: the os.version prefix is required, entries without os.version match every host (containerd#8101; no LTSC window before 1.7.6)",
        ),
        (
            (2, 1, 6),
            "containerd-2.2",
            Mapping::Covered,
            "containerd 2.1.6 is in 2.1.6–2.2.x: the LTSC floor",
        ),
        (
            (1, 6, 20),
            "containerd-1.6.18",
            Mapping::Covered,
            "containerd 1.6.20 is in 1.6.18–1.6.22: the os.version prefix is required, entries without os.version match",
        ),
        (
            (1, 6, 40),
            "containerd-1.6",
            Mapping::NearestOlder,
            "containerd 1.6.40: no profile covers 1.6.40 and later; judged as containerd-1.6, the nearest older row of the 1.6 series: ",
        ),
        (
            (1, 5, 18),
            "containerd-1.5",
            Mapping::Covered,
            "containerd 1.5.18 is in 1.5.2–1.5.x: the os.version prefix is required (no fallback for entries without os.version), the entry's OS lower-cased first",
        ),
        (
            (1, 5, 0),
            "containerd-1.5",
            Mapping::NearestNewer,
            "containerd 1.5.0: no profile covers 1.5.0–1.5.1; judged as containerd-1.5, the nearest newer row of the 1.5 series: ",
        ),
        (
            (1, 4, 12),
            "containerd-1.4",
            Mapping::Covered,
            "containerd 1.4.12 is in 1.4.x: any Windows entry of the architecture matches (os.version not read), then linux/amd64 entries",
        ),
        (
            (1, 3, 9),
            "containerd-1.4",
            Mapping::OlderThanEveryRow,
            "containerd 1.3.9: older than every profile (its matcher is not modelled); judged as containerd-1.4, the oldest profile (1.4.x): any Windows entry",
        ),
        (
            (2, 4, 0),
            "containerd-next",
            Mapping::Main,
            "containerd 2.4.0: newer than every release a profile covers (the newest: 2.3.x); judged as containerd-next: containerd main, unreleased",
        ),
        (
            (1, 8, 0),
            "containerd-next",
            Mapping::Main,
            "containerd 1.8.0: no profile covers the 1.8 series; judged as containerd-next: ",
        ),
    ];

    #[test]
    fn each_mapping_gives_its_reason() {
        let cases = MAPPINGS;
        for (version, profile, mapping, reason) in cases {
            let got = RuntimeChoice::containerd(*version);
            assert_eq!(got.profile.name(), *profile, "{version:?}");
            assert_eq!(got.mapping, *mapping, "{version:?}");
            assert!(
                got.reason.starts_with(reason),
                "{version:?}: {}",
                got.reason
            );
            assert_eq!(got.note().is_some(), *mapping != Mapping::Covered);
        }
    }

    #[test]
    fn a_gap_of_one_release_is_named_alone() {
        assert_eq!(release((1, 7, u32::MAX)), "1.7.x");
        assert_eq!(span(((2, 0, 0), (2, 1, 5))), "2.0.0–2.1.5");
        assert_eq!(gap((1, 6, 18)), "1.6.18–1.6.22");
        assert_eq!(gap((1, 6, 22)), "1.6.18–1.6.22");
        assert_eq!(gap((1, 6, 4_000)), "1.6.40 and later");
    }

    #[test]
    fn a_runtime_taken_as_reported_says_its_matcher() {
        let got = RuntimeChoice::as_reported(RuntimeProfile::CRI_O, "cri-o", "1.31.6");
        assert_eq!(got.mapping, Mapping::Covered);
        assert!(
            got.reason
                .starts_with("cri-o 1.31.6: CRI-O pulls through containers/image"),
            "{}",
            got.reason
        );
        assert_eq!(got.note(), None);
    }
}
