//! Platforms and the rules a containerd node uses to pick one entry of a manifest list.
//!
//! This module models, without I/O, what `containerd/platforms` does on a Windows (or Linux)
//! node: normalise os/architecture/variant, compare the Windows `os.version` with the host's
//! under the LTSC compatibility window, check `os.features`, order the matching entries and
//! take the first. The rules changed between containerd releases, so they are parameterised
//! by a [`RuntimeProfile`]. `docs/matching.md` gives the rules per release and their sources.
//!
//! - `profile.rs`: [`RuntimeProfile`] and the profile table, one row per profile (its name,
//!   containerd releases, LTSC builds and rule switches);
//! - `choice.rs`: [`RuntimeChoice`], the profile a node's runtime version maps to and why;
//! - `windows.rs`: [`WindowsVersion`] and the Windows builds known by name;
//! - this file: [`Platform`], the matcher ([`matches()`], [`preference`]) and the selection
//!   ([`select`]). No file below imports it.
//!
//! Microsoft's compatibility matrix ("Windows container version compatibility") is what the
//! window encodes: process-isolated containers need the host's build below Windows Server 2022;
//! from WS2022 on, a host runs images from the newest LTSC release it is newer than, up to
//! its own build.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::fmt;

use serde::{Deserialize, Serialize};

mod choice;
mod profile;
mod windows;

pub use choice::RuntimeChoice;
pub use profile::{ContainerdVersion, DockerVersion, Mapping, RuntimeProfile};
pub use windows::{BUILD_WS2022, BUILD_WS2025, WindowsVersion, build_name, named_build};

/// A platform as written in an index descriptor or an image config.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Platform {
    /// Operating system (`linux`, `windows`).
    #[serde(default)]
    pub os: String,
    /// CPU architecture (`amd64`, `arm64`, …).
    #[serde(default)]
    pub architecture: String,
    /// CPU variant (`v8`, `v7`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant: Option<String>,
    /// Windows `major.minor.build[.revision]`.
    #[serde(
        rename = "os.version",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub os_version: Option<String>,
    /// Required OS features (`win32k`, …).
    #[serde(rename = "os.features", default, skip_serializing_if = "Vec::is_empty")]
    pub os_features: Vec<String>,
}

impl Platform {
    /// A platform with os and architecture only.
    pub fn new(os: &str, architecture: &str) -> Platform {
        Platform {
            os: os.to_string(),
            architecture: architecture.to_string(),
            ..Platform::default()
        }
    }

    /// Sets the variant.
    pub fn with_variant(mut self, variant: &str) -> Platform {
        self.variant = Some(variant.to_string());
        self
    }

    /// Sets the Windows os.version.
    pub fn with_os_version(mut self, version: &str) -> Platform {
        self.os_version = Some(version.to_string());
        self
    }

    /// True for `os: windows` (case-insensitive, as containerd lower-cases it).
    pub fn is_windows(&self) -> bool {
        self.os.eq_ignore_ascii_case("windows")
    }

    /// The normalised `(os, architecture, variant)` triple containerd compares.
    pub fn normalized(&self) -> (String, String, String) {
        let (os, arch, variant) = self.normal();
        (os.into_owned(), arch.into_owned(), variant.into_owned())
    }

    /// [`Platform::normalized`], borrowed from the platform when it is lower-case already (as
    /// platforms almost always are): the matcher compares every entry with every host under
    /// every profile, and copying the strings was most of a batch's allocations.
    pub(crate) fn normal(&self) -> (Cow<'_, str>, Cow<'_, str>, Cow<'_, str>) {
        let os = lower(&self.os);
        let arch = lower(&self.architecture);
        let variant = lower(self.variant.as_deref().unwrap_or(""));
        let (arch, variant) = match (arch, variant) {
            (Cow::Borrowed(a), Cow::Borrowed(v)) => {
                let (a, v) = normal_arch(a, v);
                (Cow::Borrowed(a), Cow::Borrowed(v))
            }
            (a, v) => {
                let (a, v) = normal_arch(&a, &v);
                (Cow::Owned(a.to_string()), Cow::Owned(v.to_string()))
            }
        };
        (os, arch, variant)
    }

    /// The parsed Windows version, `None` when absent or unparsable.
    pub fn windows_version(&self) -> Option<WindowsVersion> {
        self.os_version.as_deref().and_then(WindowsVersion::parse)
    }

    /// `os/arch[/variant]` without os.version.
    pub fn os_arch(&self) -> String {
        let (os, arch, variant) = self.normal();
        let mut out = String::with_capacity(os.len() + arch.len() + variant.len() + 2);
        out.push_str(&os);
        out.push('/');
        out.push_str(&arch);
        if !variant.is_empty() {
            out.push('/');
            out.push_str(&variant);
        }
        out
    }

    /// Parses `os/arch[/variant][:osversion]`, the `--platform` syntax.
    pub fn parse(s: &str) -> Result<Platform, PlatformError> {
        let bad = |why: &str| PlatformError(format!("'{s}' is not a platform: {why}"));
        let (spec, version) = match s.split_once(':') {
            Some((spec, v)) => (spec, Some(v)),
            None => (s, None),
        };
        let parts: Vec<&str> = spec.split('/').collect();
        if parts.len() < 2 || parts.len() > 3 || parts.iter().any(|p| p.is_empty()) {
            return Err(bad("expected os/arch[/variant][:osversion]"));
        }
        let valid = |p: &&str| {
            p.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        };
        if !parts.iter().all(valid) {
            return Err(bad("only letters, digits, '-' and '_' are allowed"));
        }
        let mut platform = parsed(parts[0], parts[1], parts.get(2).copied());
        if let Some(v) = version {
            if !platform.is_windows() {
                return Err(bad("an os.version is only meaningful for windows"));
            }
            // A node states `major.minor.build` (`DefaultSpec`), never a revision.
            let version = match named_build(v) {
                Some(build) => WindowsVersion::host(build).to_string(),
                None if WindowsVersion::is_well_formed(v) => WindowsVersion::parse(v)
                    .unwrap_or(WindowsVersion::ZERO)
                    .to_string(),
                None => {
                    return Err(bad(
                        "os.version must be MAJOR.MINOR.BUILD[.REVISION] (e.g. 10.0.17763) \
                         or a release name (ltsc2019, ltsc2022, ltsc2025, 1809, …)",
                    ));
                }
            };
            platform.os_version = Some(version);
        }
        Ok(platform)
    }
}

impl fmt::Display for Platform {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.os_arch())?;
        if let Some(v) = &self.os_version {
            f.write_str(":")?;
            f.write_str(v)?;
        }
        Ok(())
    }
}

/// `os/arch[/variant]` as containerd's `platforms.Parse` reads it (v1.6.20 `platforms.go`, the
/// same in containerd/platforms): the OS through `normalizeOS` (lower-cased, `macos` is
/// `darwin`), architecture and variant through `normalizeArch`; from `os/arch`, arm's default
/// `v7` is dropped; from `os/arch/variant`, arm64 without a variant is `v8`.
fn parsed(os: &str, arch: &str, variant: Option<&str>) -> Platform {
    let os = match os.to_ascii_lowercase().as_str() {
        "macos" => "darwin".to_string(),
        os => os.to_string(),
    };
    let (arch, lower_variant) = (
        arch.to_ascii_lowercase(),
        variant.unwrap_or("").to_ascii_lowercase(),
    );
    let (arch, normal) = normal_arch(&arch, &lower_variant);
    let normal = match (arch, normal, variant.is_some()) {
        ("arm", "v7", false) => "",
        ("arm64", "", true) => "v8",
        (_, v, _) => v,
    };
    let platform = Platform::new(&os, arch);
    if normal.is_empty() {
        platform
    } else {
        platform.with_variant(normal)
    }
}

/// A `--platform` string that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct PlatformError(String);

/// containerd's architecture/variant normalisation (`platforms.NormalizeArch`), of lower-case
/// input: the pair is the input's or a constant.
fn normal_arch<'a>(arch: &'a str, variant: &'a str) -> (&'a str, &'a str) {
    let (a, v) = match (arch, variant) {
        ("i386", _) => ("386", ""),
        ("x86_64" | "x86-64" | "amd64", "v1") => ("amd64", ""),
        ("x86_64" | "x86-64" | "amd64", v) => ("amd64", v),
        ("aarch64" | "arm64", "8" | "v8" | "") => ("arm64", ""),
        ("aarch64" | "arm64", v) => ("arm64", v),
        ("armhf", _) => ("arm", "v7"),
        ("armel", _) => ("arm", "v6"),
        ("arm", "" | "7") => ("arm", "v7"),
        ("arm", "5" | "6" | "8") => ("arm", ""),
        (a, v) => (a, v),
    };
    let v = match (a, variant) {
        ("arm", "5") => "v5",
        ("arm", "6") => "v6",
        ("arm", "8") => "v8",
        _ => v,
    };
    (a, v)
}

/// `s` in ASCII lower case, borrowed when it is already.
fn lower(s: &str) -> Cow<'_, str> {
    if s.bytes().any(|b| b.is_ascii_uppercase()) {
        Cow::Owned(s.to_ascii_lowercase())
    } else {
        Cow::Borrowed(s)
    }
}

/// containerd's `platformVector` (containerd/platforms `compare.go`, used by `Only`): the
/// normalised `(architecture, variant)` pairs a Linux host of `arch`/`variant` accepts, best
/// first. amd64 also takes its lower levels and `386`; arm takes older variants down to v5;
/// arm64 also takes `arm/v8` … `arm/v5`.
fn containerd_vector(arch: &str, variant: &str) -> Vec<(String, String)> {
    let pair = |a: &str, v: String| (a.to_string(), v);
    let level = |v: &str| v.strip_prefix('v').and_then(|n| n.parse::<u8>().ok());
    let mut vector = vec![pair(arch, variant.to_string())];
    match arch {
        "amd64" => {
            for k in (1..level(variant).unwrap_or(0)).rev() {
                // Normalize drops amd64's default level v1.
                let v = if k == 1 {
                    String::new()
                } else {
                    format!("v{k}")
                };
                vector.push(pair("amd64", v));
            }
            vector.push(pair("386", String::new()));
        }
        "arm" => {
            for k in (5..level(variant).unwrap_or(0)).rev() {
                vector.push(pair("arm", format!("v{k}")));
            }
        }
        "arm64" => {
            for k in (5..=8).rev() {
                vector.push(pair("arm", format!("v{k}")));
            }
        }
        _ => {}
    }
    vector
}

/// containers/image `WantedPlatforms` (`internal/pkg/platform/platform_matcher.go`) for a
/// host: `(os, architecture, variant)` most preferred first. The variant is the host's, or
/// what `/proc/cpuinfo` gives on such a CPU (`v8` on arm64, `v7` on arm); with a variant the
/// list runs down the architecture's table from it, then the empty variant.
fn crio_wanted(host: &Platform) -> Vec<(String, String, String)> {
    let arch = host.architecture.as_str();
    let detected = match (host.variant.as_deref().unwrap_or(""), arch) {
        ("", "arm64") => "v8",
        ("", "arm") => "v7",
        (v, _) => v,
    };
    let table: &[&str] = match arch {
        "arm" => &["v8", "v7", "v6", "v5"],
        "arm64" => &["v8"],
        _ => &[],
    };
    let mut variants: Vec<&str> = if detected.is_empty() {
        std::iter::once("").chain(table.iter().copied()).collect()
    } else {
        match table.iter().position(|v| *v == detected) {
            Some(i) => table[i..].to_vec(),
            None => vec![detected],
        }
    };
    if !detected.is_empty() {
        variants.push("");
    }
    variants
        .into_iter()
        .map(|v| (host.os.clone(), arch.to_string(), v.to_string()))
        .collect()
}

/// Where an entry of platform `entry` stands for a node of platform `host` under `profile`:
/// `Some(rank)`, lower preferred, when the node accepts it; `None` when it does not.
///
/// containerd: Windows hosts compare os/architecture/variant after normalisation, then
/// `os.features` and the version window (rank 0); Linux hosts accept the platforms of
/// `containerd_vector`, ranked by position (`Ordered`). CRI-O: the position in
/// `crio_wanted`, strings compared exactly (`MatchesPlatform`), `os.version` ignored.
pub fn preference(profile: RuntimeProfile, host: &Platform, entry: &Platform) -> Option<usize> {
    accepts(profile, host, entry, Stage::Pull)
}

/// What a match decides: the pull (the runtime's matcher) or the start (the host's own
/// compatibility check, where a pulled image of another build may still run).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Stage {
    Pull,
    Start,
}

/// Whether an image of platform `image`, once pulled, starts on a node of platform `host`
/// under `profile`: [`matches()`], except that a profile whose pull matcher compares
/// `os.version` prefixes (containerd 1.6.0 – 1.6.17) is judged by build compatibility, which
/// the host decides at start, not the matcher.
pub fn runs(profile: RuntimeProfile, host: &Platform, image: &Platform) -> bool {
    accepts(profile, host, image, Stage::Start).is_some()
}

/// [`preference`] for one stage.
fn accepts(
    profile: RuntimeProfile,
    host: &Platform,
    entry: &Platform,
    stage: Stage,
) -> Option<usize> {
    if profile == RuntimeProfile::CRI_O {
        let variant = entry.variant.as_deref().unwrap_or("");
        return crio_wanted(host).iter().position(|(os, arch, v)| {
            *os == entry.os && *arch == entry.architecture && v == variant
        });
    }
    let (hos, harch, hvar) = host.normal();
    let (eos, earch, evar) = entry.normal();
    // `normalizeOS`: an empty OS is the node's own (`runtime.GOOS`); the Windows rows that
    // compare it as written refuse it below (`windows_os_matches`).
    let eos = if eos.is_empty() { hos.clone() } else { eos };
    if hos != eos {
        // containerd 1.4 `Default` on Windows: `linux/amd64` (as written, whatever the host's
        // architecture) after every Windows entry.
        let linux =
            hos == "windows" && eos == "linux" && (earch.as_ref(), evar.as_ref()) == ("amd64", "");
        return (stage == Stage::Pull && profile.linux_fallback() && linux).then_some(1);
    }
    if hos != "windows" {
        return containerd_vector(&harch, &hvar)
            .iter()
            .position(|(a, v)| *a == earch && *v == evar);
    }
    let arch = if profile.is_docker() && stage == Stage::Pull {
        // moby `filterManifests`: `Platform.Architecture == runtime.GOARCH`, as written; the
        // variant is not read.
        entry.architecture == harch
    } else {
        harch == earch && hvar == evar
    };
    (profile.windows_os_matches(&entry.os) && arch && windows_matches(profile, host, entry, stage))
        .then_some(0)
}

/// Does a node of platform `host` accept an entry of platform `entry` under `profile`?
///
/// `host.os_version` is the node's `major.minor.build`; an empty host version matches every
/// entry, and an entry without `os.version` matches every host (see `docs/matching.md`).
pub fn matches(profile: RuntimeProfile, host: &Platform, entry: &Platform) -> bool {
    preference(profile, host, entry).is_some()
}

/// The Windows part of containerd's matcher: `os.features` (2.3 and later: the first `win32k`
/// set aside, the rest each matched by one of the host's) and `windowsVersionMatcher.Match`,
/// the entry's version read as the profile's release reads it.
fn windows_matches(
    profile: RuntimeProfile,
    host: &Platform,
    entry: &Platform,
    stage: Stage,
) -> bool {
    if profile.checks_features() && !features_subset(&entry.os_features, &host.os_features) {
        return false;
    }
    let host_version = host.os_version.as_deref().unwrap_or("");
    let entry_version = entry.os_version.as_deref().unwrap_or("");
    if stage == Stage::Pull && profile.windows_any_version() {
        // containerd 1.4 `matcher.Match`: `os.version` is not read.
        return true;
    }
    if stage == Stage::Pull && profile.windows_prefix_only() {
        // containerd 1.6.0 – 1.6.17 `matchComparer.Match`: `strings.HasPrefix` on the
        // strings, nothing else (an entry without os.version matches no versioned host).
        return entry_version.starts_with(host_version);
    }
    if stage == Stage::Pull && profile.windows_prefix_or_none() {
        // containerd 1.6.18 – 1.6.22 `matchComparer.Match`: no os.version matches, then the
        // prefix (containerd#8106).
        return entry_version.is_empty() || entry_version.starts_with(host_version);
    }
    if entry_version.is_empty() {
        return true;
    }
    if host_version.is_empty() {
        // containerd 1.6.23 – 1.6.39 `matchComparer.Match`: `GetOsVersion("")` is 0.0.0, which
        // `CheckHostAndContainerCompat` refuses against every versioned entry; the rest take
        // them all. Whether the image then starts, an unknown host cannot say.
        return stage == Stage::Start || profile.empty_host_takes_every_entry();
    }
    if stage == Stage::Pull && profile.windows_not_newer() {
        return !newer_build(host_version, entry_version);
    }
    let h = WindowsVersion::parse(host_version).unwrap_or(WindowsVersion::ZERO);
    if h == WindowsVersion::ZERO {
        // containerd treats a host whose version does not parse as "no version".
        return true;
    }
    profile.compatible(h, profile.windows_version(entry_version))
}

/// containerd/platforms `matcher.Match` as containerd 2.3 and main vendor it: the entry's
/// first `win32k` is set aside (containerd/platforms#31), not every one and with no
/// deduplication, so `[win32k, win32k]` keeps one `win32k` a default host lacks; the rest
/// must be a subset of the host's features, each feature matched by one of the host's (the
/// ordered walk over both lists).
fn features_subset(entry: &[String], host: &[String]) -> bool {
    let mut entry: Vec<&str> = entry.iter().map(String::as_str).collect();
    if let Some(i) = entry.iter().position(|f| *f == "win32k") {
        entry.remove(i);
    }
    let mut host: Vec<&str> = host.iter().map(String::as_str).collect();
    entry.sort_unstable();
    host.sort_unstable();
    let mut rest = host.iter();
    entry.iter().all(|f| rest.any(|h| h == f))
}

/// moby `pull_v2_windows.go` `checkImageCompatibility`: is the entry's build (its third
/// dot-separated field, read by Go's `strconv.Atoi`) above the host's? An entry with fewer
/// than three fields, or whose build does not parse, is not; major and minor are not compared.
fn newer_build(host_version: &str, entry_version: &str) -> bool {
    let host = WindowsVersion::parse(host_version).unwrap_or(WindowsVersion::ZERO);
    match entry_version.split('.').nth(2).map(windows::go_atoi) {
        Some((build, true)) => build > i64::from(host.build),
        _ => false,
    }
}

/// The annotation containers/image writes on the zstd instance of a gzip/zstd pair
/// (`podman manifest push --add-compression zstd`).
pub const ANNOTATION_ZSTD: &str = "io.github.containers.compression.zstd";

/// One entry of a manifest list as the selector sees it.
#[derive(Debug, Clone, Default)]
pub struct Candidate<'a> {
    /// The descriptor's `platform`, if it has one: borrowed from the list being resolved
    /// (a host's resolution then copies no platform it does not report).
    pub platform: Option<Cow<'a, Platform>>,
    /// The child's config platform, used only when a platform-less entry is taken.
    pub config_platform: Option<Platform>,
    /// The entry is the zstd instance of a gzip/zstd pair ([`ANNOTATION_ZSTD`] is `"true"`).
    pub zstd: bool,
    /// The entry is itself a manifest list (a nested index), walked in turn when taken.
    pub nested: bool,
}

/// The format of the list selected from: containers/image reads the two differently.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ListFormat {
    /// An OCI image index.
    #[default]
    Oci,
    /// A Docker manifest list (schema2).
    Docker,
}

/// How one candidate fared.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Considered {
    /// Index of the entry in the manifest list.
    pub index: usize,
    /// Whether the entry's platform matches the host.
    pub matched: bool,
    /// Why it was (not) taken.
    pub reason: String,
}

/// The outcome of a selection: the chosen entry (if any) and every candidate's story,
/// in the runtime's preference order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Selection {
    /// Index of the entry the node pulls; `None` means "no matching manifest".
    pub selected: Option<usize>,
    /// Candidates in the order the runtime prefers them.
    pub considered: Vec<Considered>,
}

/// Chooses the entry a node of platform `host` pulls from a list (see `docs/matching.md`).
///
/// containerd (`images.Manifest` with limit 1): entries whose platform matches come first,
/// ordered by the profile's preference (stable, ties keep index order), then entries with no
/// platform at all; only the first candidate is taken, and a platform-less one only when it
/// is a nested index or its config matches the host (the next one is not tried).
///
/// CRI-O (containers/image `chooseInstance`): the best rank in `WantedPlatforms` wins, a zstd
/// instance over its gzip twin, then the earlier entry; in an OCI index a platform-less entry
/// is a candidate ranked last and taken without reading its config; in a Docker list it never
/// matches.
pub fn select(
    profile: RuntimeProfile,
    host: &Platform,
    format: ListFormat,
    candidates: &[Candidate],
) -> Selection {
    let mut selected = None;
    let considered = ranked(profile, host, format, candidates)
        .into_iter()
        .enumerate()
        .map(|(pos, (index, rank))| {
            let (matched, taken, reason) =
                consider(profile, host, &candidates[index], rank, pos == 0);
            if taken {
                selected = Some(index);
            }
            Considered {
                index,
                matched,
                reason: reason.to_string(),
            }
        })
        .collect();
    Selection {
        selected,
        considered,
    }
}

/// Where a candidate stands for a host. Runtimes drop entries whose platform does not match;
/// platform-less entries stay as candidates after every matching one. Non-matching ones are
/// listed last, for reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Rank {
    Match,
    NoPlatform,
    NoMatch,
}

/// The candidates (by index) in the order the runtime prefers them: by rank; matching
/// Windows entries by the profile's preference, Linux ones by their place in the host's
/// platform vector (CRI-O: wanted list, then zstd first); ties in list order.
fn ranked(
    profile: RuntimeProfile,
    host: &Platform,
    format: ListFormat,
    candidates: &[Candidate],
) -> Vec<(usize, Rank)> {
    let crio = profile == RuntimeProfile::CRI_O;
    let mut ranked: Vec<(usize, Rank, usize)> = candidates
        .iter()
        .enumerate()
        .map(|(i, c)| match &c.platform {
            Some(p) => match preference(profile, host, p) {
                Some(n) => (i, Rank::Match, n),
                None => (i, Rank::NoMatch, 0),
            },
            // containers/image's Docker list never matches an entry without a platform; nor
            // does moby, whose descriptor platform is then the zero value.
            None if crio && format == ListFormat::Docker => (i, Rank::NoMatch, 0),
            None if profile.is_docker() => (i, Rank::NoMatch, 0),
            None => (i, Rank::NoPlatform, 0),
        })
        .collect();
    let windows = host.is_windows() && !crio;
    let host_version = host.windows_version().map(|v| v.to_string());
    let host_version = host_version.as_deref().unwrap_or("");
    ranked.sort_by(|(ia, ra, na), (ib, rb, nb)| {
        let (a, b) = (&candidates[*ia], &candidates[*ib]);
        ra.cmp(rb).then_with(|| match (&a.platform, &b.platform) {
            // containerd 1.4's Linux entries (rank 1) come after every Windows one.
            (Some(pa), Some(pb)) if *ra == Rank::Match && windows => na.cmp(nb).then_with(|| {
                profile.prefer(
                    host_version,
                    pa.os_version.as_deref(),
                    pb.os_version.as_deref(),
                )
            }),
            _ if *ra != Rank::Match && !crio => Ordering::Equal,
            _ => na.cmp(nb).then_with(|| {
                // containers/image `isPreferredOver`: zstd wins in an OCI index.
                let zstd = crio && format == ListFormat::Oci;
                if zstd {
                    b.zstd.cmp(&a.zstd)
                } else {
                    Ordering::Equal
                }
            }),
        })
    });
    ranked.into_iter().map(|(i, r, _)| (i, r)).collect()
}

/// One candidate's story: whether it matches, whether it is the one pulled, and why. Only the
/// `first` candidate can be pulled; a platform-less one when it is a nested index, under
/// CRI-O, or when its config matches (containerd 1.6/1.7 compare OS and architecture only).
fn consider(
    profile: RuntimeProfile,
    host: &Platform,
    candidate: &Candidate,
    rank: Rank,
    first: bool,
) -> (bool, bool, &'static str) {
    match rank {
        Rank::Match if first && candidate.nested && profile.is_docker() => (
            true,
            false,
            "first matching entry is itself a list; moby's pullManifestList does not walk it \
             (unsupported manifest format)",
        ),
        Rank::Match if first => (true, true, "selected: first matching entry"),
        Rank::Match => (true, false, "matches, but a preferred entry comes first"),
        Rank::NoMatch => (false, false, "platform does not match the host"),
        Rank::NoPlatform if first && candidate.nested => (
            true,
            true,
            "selected: a nested index without platform; it is walked in turn",
        ),
        Rank::NoPlatform if first && profile == RuntimeProfile::CRI_O => (
            true,
            true,
            "selected: no platform, nothing better; containers/image does not read its config",
        ),
        Rank::NoPlatform if first => {
            let ok = candidate.config_platform.as_ref().is_some_and(|p| {
                if profile.full_config_check() {
                    matches(profile, host, p)
                } else {
                    // `images/image.go` `Manifest` normalises the config's OS and architecture
                    // before matching (so containerd 1.6 takes a config saying `Windows`, and
                    // one saying nothing is the node's own OS, `normalizeOS`).
                    let os = match p.os.as_str() {
                        "" => host.normal().0.into_owned(),
                        os => os.to_ascii_lowercase(),
                    };
                    matches(profile, host, &Platform::new(&os, &p.architecture))
                }
            });
            if ok {
                (
                    true,
                    true,
                    "selected: no platform in the list, config matches",
                )
            } else {
                (
                    false,
                    false,
                    "first candidate has no platform and its config does not match; \
                     containerd stops here",
                )
            }
        }
        Rank::NoPlatform => (
            false,
            false,
            "no platform; only the first candidate is tried",
        ),
    }
}

crate::error::input_errors!(PlatformError);

#[cfg(test)]
mod tests;
