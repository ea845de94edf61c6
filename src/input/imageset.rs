//! oc-mirror v2 ImageSetConfigurations (`--from-imageset`, `mirror.openshift.io/v2alpha1`):
//! the `mirror.additionalImages[]` imgcheck checks, with what oc-mirror copies of each
//! (`platforms`) and where it puts it (`targetRepo`, `targetTag`), and a warning for each
//! section whose images imgcheck does not read, or whose platform filter leaves out a
//! platform the hosts need.
//!
//! The fields follow openshift/oc-mirror `internal/pkg/api/v2alpha1/type_config.go`
//! (`Mirror`, `Platform`, `Operator`, `Chart`, `AdditionalImage`) and `type_platform.go`
//! (`InstancePlatformFilter`: an OS and an architecture, nothing else).

use std::collections::BTreeSet;

use serde::Deserialize;

use super::error::InputError;
use super::lists::read_all;
use crate::reference::ImageRef;

/// The apiVersion of oc-mirror v2's ImageSetConfiguration.
const V2: &str = "mirror.openshift.io/v2alpha1";

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ImageSetConfiguration {
    kind: String,
    api_version: String,
    #[serde(default)]
    mirror: Option<MirrorSection>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct MirrorSection {
    #[serde(default)]
    additional_images: Vec<AdditionalImage>,
    /// Release payloads (channels), filtered by `platforms` / the deprecated `architectures`.
    #[serde(default)]
    platform: Option<PlatformSection>,
    /// Operator catalogs, each with its own `platforms`.
    #[serde(default)]
    operators: Vec<Filtered>,
    /// Helm charts, each with its own `platforms`.
    #[serde(default)]
    helm: Option<HelmSection>,
}

/// `mirror.platform` (type_config.go `Platform`).
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct PlatformSection {
    #[serde(default)]
    channels: Vec<serde_yaml_ng::Value>,
    #[serde(default)]
    release: Option<String>,
    #[serde(default)]
    architectures: Vec<String>,
    #[serde(default)]
    platforms: Vec<PlatformFilter>,
}

/// An operator catalog or a chart: only its `platforms` filter matters here.
#[derive(Deserialize)]
struct Filtered {
    #[serde(default)]
    platforms: Vec<PlatformFilter>,
}

#[derive(Deserialize, Default)]
struct HelmSection {
    #[serde(default)]
    repositories: Vec<HelmRepository>,
    #[serde(default)]
    local: Vec<Filtered>,
}

#[derive(Deserialize)]
struct HelmRepository {
    #[serde(default)]
    charts: Vec<Filtered>,
}

/// type_platform.go `InstancePlatformFilter`: an OS and an architecture. Unknown keys are
/// refused: oc-mirror would ignore an `osVersion` or `variant`, so the filter would not do what
/// it says.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PlatformFilter {
    #[serde(default)]
    os: String,
    #[serde(default)]
    architecture: String,
}

/// type_config.go `AdditionalImage`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct AdditionalImage {
    name: String,
    #[serde(default)]
    target_repo: Option<String>,
    #[serde(default)]
    target_tag: Option<String>,
    #[serde(default)]
    platforms: Vec<PlatformFilter>,
}

/// One `mirror.additionalImages[]` entry: the image, and what oc-mirror v2 copies of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageSetEntry {
    /// The image (`name`).
    pub image: ImageRef,
    /// Where it is in the file: `mirror.additionalImages[N]`.
    pub entry: String,
    /// Its `platforms` filter as `os/architecture`; empty: oc-mirror copies every platform
    /// (type_internal.go `CopyImageSchema.Platforms`: nil means all).
    pub platforms: Vec<String>,
    /// `targetRepo`: the repository path the image is written to instead of the source's.
    pub target_repo: Option<String>,
    /// `targetTag`: the tag written instead of the source's.
    pub target_tag: Option<String>,
}

/// The entries of an ImageSetConfiguration, and what in it was not read.
#[derive(Debug, Clone)]
pub struct ImageSet {
    /// `mirror.additionalImages[]`, in order.
    pub entries: Vec<ImageSetEntry>,
    /// The file, as given.
    origin: String,
    /// The sections present that imgcheck does not check (`mirror.platform`,
    /// `mirror.operators`, `mirror.helm`).
    unread: Vec<&'static str>,
    /// The platform filters of those sections.
    filters: Vec<SectionFilter>,
}

impl ImageSet {
    /// The images of the entries, in order.
    pub fn images(&self) -> Vec<ImageRef> {
        self.entries.iter().map(|e| e.image.clone()).collect()
    }

    /// What the run should be told of the sections imgcheck does not read, one line each:
    /// that they are not checked, and each platform filter there that leaves out a platform
    /// in `needed` (`os/architecture` of the hosts judged), naming the field and what to add.
    pub fn warnings(&self, needed: &BTreeSet<String>) -> Vec<String> {
        let origin = &self.origin;
        let mut out: Vec<String> = (self.unread.iter())
            .map(|section| {
                format!(
                    "{origin}: {section} is not checked: imgcheck verifies \
                     mirror.additionalImages only; list the images to check there (or in \
                     --from-file)"
                )
            })
            .collect();
        for f in &self.filters {
            let missing: Vec<&String> = needed.iter().filter(|p| !f.kept.contains(p)).collect();
            if missing.is_empty() {
                continue;
            }
            let add: Vec<String> = (missing.iter())
                .filter_map(|p| p.split_once('/'))
                .map(|(os, arch)| format!("{{os: {os}, architecture: {arch}}}"))
                .collect();
            let names: Vec<&str> = missing.iter().map(|p| p.as_str()).collect();
            out.push(format!(
                "{origin}: {}: oc-mirror copies {} only of {} ({}): their {} entries will not \
                 be mirrored; add {} to {}",
                f.field,
                f.kept.join(", "),
                f.of,
                f.why,
                names.join(", "),
                add.join(" and "),
                f.field
            ));
        }
        out
    }
}

/// `os/architecture` of each filter; an empty OS or architecture is refused, as oc-mirror's
/// `ValidatePlatforms` refuses it (type_platform.go).
fn filters(list: &[PlatformFilter], field: &str, origin: &str) -> Result<Vec<String>, InputError> {
    list.iter()
        .enumerate()
        .map(
            |(i, p)| match (p.os.is_empty(), p.architecture.is_empty()) {
                (false, false) => Ok(format!("{}/{}", p.os, p.architecture)),
                _ => Err(InputError::new(
                    format!("{origin}: {field}[{i}]"),
                    "a platform filter needs both 'os' and 'architecture' (oc-mirror refuses it)",
                )),
            },
        )
        .collect()
}

/// Is `s` a repository path oc-mirror accepts as `targetRepo` (type_config.go
/// `IsValidPathComponent`: path components of lower-case letters and digits, joined by `.`,
/// `_`, `__` or dashes, separated by `/`)?
pub fn is_valid_target_repo(s: &str) -> bool {
    fn component(c: &str) -> bool {
        let alnum = |ch: char| ch.is_ascii_lowercase() || ch.is_ascii_digit();
        if !c.starts_with(alnum) || !c.ends_with(alnum) {
            return false;
        }
        c.split(alnum)
            .filter(|sep| !sep.is_empty())
            .all(|sep| matches!(sep, "." | "_" | "__") || sep.chars().all(|ch| ch == '-'))
    }
    !s.is_empty() && s.split('/').all(component)
}

/// Is `s` a tag (`[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}`)?
fn is_valid_tag(s: &str) -> bool {
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    s.len() <= 128 && s.starts_with(word) && s.chars().all(|c| word(c) || c == '.' || c == '-')
}

/// One `mirror.additionalImages[i]` entry, checked as oc-mirror would: an invalid `targetRepo`
/// makes oc-mirror skip the image (additional/local_stored_collector.go
/// `AdditionalImagesCollector`), so it is refused here rather than passed.
fn entry(i: usize, a: &AdditionalImage, origin: &str) -> Result<ImageSetEntry, InputError> {
    let field = format!("mirror.additionalImages[{i}]");
    let at = |what: &str| format!("{origin}: {field}{what}");
    let image = a
        .name
        .parse::<ImageRef>()
        .map_err(|e| InputError::new(at(".name"), e.to_string()))?;
    if let Some(r) = a
        .target_repo
        .as_deref()
        .filter(|r| !is_valid_target_repo(r))
    {
        return Err(InputError::new(
            at(".targetRepo"),
            format!(
                "'{r}' is not a repository path (lower-case path components joined by '/', no \
                 tag or digest): oc-mirror skips this image"
            ),
        ));
    }
    if let Some(t) = a.target_tag.as_deref().filter(|t| !is_valid_tag(t)) {
        return Err(InputError::new(
            at(".targetTag"),
            format!("'{t}' is not a tag"),
        ));
    }
    Ok(ImageSetEntry {
        image,
        platforms: filters(&a.platforms, &format!("{field}.platforms"), origin)?,
        entry: field,
        target_repo: a.target_repo.clone().filter(|r| !r.is_empty()),
        target_tag: a.target_tag.clone().filter(|t| !t.is_empty()),
    })
}

/// What `mirror.platform` copies of a release: its `platforms`; else, for the deprecated
/// `architectures`, `linux/<arch>` each; else `linux/amd64` (type_config.go `Platform`), with
/// which of the three it is.
fn release_platforms(
    p: &PlatformSection,
    origin: &str,
) -> Result<(Vec<String>, &'static str), InputError> {
    let listed = filters(&p.platforms, "mirror.platform.platforms", origin)?;
    Ok(match (listed.is_empty(), p.architectures.is_empty()) {
        (false, _) => (listed, "mirror.platform.platforms"),
        (true, false) => (
            p.architectures
                .iter()
                .map(|a| format!("linux/{a}"))
                .collect(),
            "the deprecated mirror.platform.architectures, read as linux/ARCH",
        ),
        (true, true) => (
            vec!["linux/amd64".to_string()],
            "mirror.platform.platforms and architectures are empty: linux/amd64",
        ),
    })
}

/// The sections present whose images imgcheck does not read (`mirror.platform`,
/// `mirror.operators`, `mirror.helm`).
fn unread(m: &MirrorSection) -> Vec<&'static str> {
    let platform = m
        .platform
        .as_ref()
        .is_some_and(|p| !p.channels.is_empty() || p.release.is_some());
    let helm = m.helm.as_ref().is_some_and(|h| {
        !h.local.is_empty() || h.repositories.iter().any(|r| !r.charts.is_empty())
    });
    [
        ("mirror.platform", platform),
        ("mirror.operators", !m.operators.is_empty()),
        ("mirror.helm", helm),
    ]
    .into_iter()
    .filter(|(_, present)| *present)
    .map(|(name, _)| name)
    .collect()
}

/// A platform filter of a section imgcheck does not read: its field, the `os/architecture`
/// it keeps, whose images it filters, and why it keeps those.
#[derive(Debug, Clone)]
struct SectionFilter {
    field: String,
    kept: Vec<String>,
    /// Whose images: the release payload, an operator catalog, a chart.
    of: &'static str,
    why: &'static str,
}

/// Every platform filter of the sections imgcheck does not read, with its field and why it
/// keeps what it keeps: `mirror.platform`'s (when it names a release), each operator's and
/// each chart's (only when set: an empty one copies every platform).
fn section_filters(m: &MirrorSection, origin: &str) -> Result<Vec<SectionFilter>, InputError> {
    let mut out = Vec::new();
    if let Some(p) = m
        .platform
        .as_ref()
        .filter(|p| !p.channels.is_empty() || p.release.is_some())
    {
        let (kept, why) = release_platforms(p, origin)?;
        out.push(SectionFilter {
            field: "mirror.platform.platforms".to_string(),
            kept,
            of: "the release payload (not the mirror.additionalImages checked here)",
            why,
        });
    }
    let operators = m.operators.iter().enumerate().map(|(i, o)| {
        (
            format!("mirror.operators[{i}].platforms"),
            o,
            "the operator catalog",
        )
    });
    let helm = m.helm.iter().flat_map(|h| {
        let repos = h.repositories.iter().enumerate().flat_map(|(r, repo)| {
            repo.charts.iter().enumerate().map(move |(c, chart)| {
                (
                    format!("mirror.helm.repositories[{r}].charts[{c}].platforms"),
                    chart,
                    "the chart's images",
                )
            })
        });
        let local = h.local.iter().enumerate().map(|(c, chart)| {
            let field = format!("mirror.helm.local[{c}].platforms");
            (field, chart, "the chart's images")
        });
        repos.chain(local)
    });
    for (field, f, of) in operators.chain(helm) {
        let kept = filters(&f.platforms, &field, origin)?;
        if !kept.is_empty() {
            out.push(SectionFilter {
                field,
                kept,
                of,
                why: "an empty filter would copy every platform",
            });
        }
    }
    Ok(out)
}

/// Parses an oc-mirror v2 ImageSetConfiguration (`mirror.openshift.io/v2alpha1`): its
/// `mirror.additionalImages[]` entries with their filters, and a warning for each section
/// imgcheck does not read (release payloads, operator catalogs, Helm charts) and their filters
/// ([`ImageSet::warnings`]).
pub fn parse_imageset(text: &str, origin: &str) -> Result<ImageSet, InputError> {
    let err = |reason: String| InputError::new(origin, reason);
    crate::yaml::check_yaml(text).map_err(|e| err(e.to_string()))?;
    let mut value: serde_yaml_ng::Value =
        serde_yaml_ng::from_str(text).map_err(|e| err("cannot parse".to_string()).caused_by(e))?;
    crate::yaml::merge_keys(&mut value).map_err(|e| err(e.to_string()))?;
    let config: ImageSetConfiguration =
        serde_yaml_ng::from_value(value).map_err(|e| err(format!("cannot parse: {e}")))?;
    if config.kind != "ImageSetConfiguration" {
        return Err(err(format!(
            "kind is '{}', expected ImageSetConfiguration",
            config.kind
        )));
    }
    if config.api_version != V2 {
        let v1 = match config.api_version.starts_with("mirror.openshift.io/v1") {
            true => {
                " (oc-mirror v1's format: its platform filters and copy differ; write the \
                     v2alpha1 form oc-mirror v2 reads)"
            }
            false => "",
        };
        return Err(err(format!(
            "apiVersion is '{}', expected {V2}{v1}",
            config.api_version
        )));
    }
    let m = config.mirror.unwrap_or_default();
    let filters = section_filters(&m, origin)?;
    if m.additional_images.is_empty() {
        let unread = unread(&m);
        let also = match unread.is_empty() {
            true => String::new(),
            false => format!(
                " ({} not read: imgcheck checks additionalImages only)",
                unread.join(", ")
            ),
        };
        return Err(err(format!(
            "mirror.additionalImages lists no images{also}"
        )));
    }
    let entries = m
        .additional_images
        .iter()
        .enumerate()
        .map(|(i, a)| entry(i, a, origin))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(ImageSet {
        entries,
        origin: origin.to_string(),
        unread: unread(&m),
        filters,
    })
}

/// Reads an ImageSetConfiguration file (or standard input for `-`) of at most `max_bytes`.
pub fn read_imageset(path: &str, max_bytes: u64) -> Result<ImageSet, InputError> {
    parse_imageset(&read_all(path, max_bytes)?, path)
}

#[cfg(test)]
mod tests;
