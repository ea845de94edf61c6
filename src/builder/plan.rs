//! The build plan (`buildah/images.yaml`): which images to build, from which Containerfiles,
//! for which Linux architectures and Windows builds, and the policy each list must pass.
//!
//! Unknown keys and impossible values are rejected while parsing, so errors name the file,
//! line and column, as policy files do ([`crate::policy`]).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;

use crate::policy::{Arch, WindowsBuild, unique};

/// The plan file `imgcheck build` reads when `--plan` is not given.
pub const DEFAULT_PLAN: &str = "buildah/images.yaml";

/// The Windows base image used for a build when the plan names none: Microsoft's nanoserver
/// tag for the LTSC release of that build.
pub fn default_windows_base(build: u16) -> Option<String> {
    let tag = match build {
        17763 => "ltsc2019",
        20348 => "ltsc2022",
        26100 => "ltsc2025",
        _ => return None,
    };
    Some(format!("mcr.microsoft.com/windows/nanoserver:{tag}"))
}

/// The base of a HostProcess image when neither the image nor the plan names one: the
/// HostProcess base Kubernetes publishes (it runs on every Windows build, so it has no
/// os.version).
pub const DEFAULT_HOSTPROCESS_BASE: &str =
    "mcr.microsoft.com/oss/kubernetes/windows-host-process-containers-base-image:v1.0.0";

/// The `OSVERSION` build arg for a build: the nanoserver/servercore tag name upstream
/// Containerfiles put after `${OSVERSION}` (`ltsc2022`), or the build number when it has none.
pub fn osversion_arg(build: u16) -> String {
    match build {
        17763 => "ltsc2019".to_string(),
        20348 => "ltsc2022".to_string(),
        26100 => "ltsc2025".to_string(),
        other => other.to_string(),
    }
}

/// An image name: one lowercase repository path component (`[a-z0-9]+([._-][a-z0-9]+)*`),
/// pushed as `REGISTRY/NAMESPACE/<name>`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ImageName(String);

impl ImageName {
    /// The name as a string.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ImageName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

fn valid_component(s: &str) -> bool {
    let bytes = s.as_bytes();
    let alnum = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    let sep = |b: u8| matches!(b, b'.' | b'_' | b'-');
    !bytes.is_empty()
        && alnum(bytes[0])
        && alnum(bytes[bytes.len() - 1])
        && bytes.iter().all(|&b| alnum(b) || sep(b))
        && !bytes.windows(2).any(|w| sep(w[0]) && sep(w[1]))
}

impl<'de> Deserialize<'de> for ImageName {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        if valid_component(&s) {
            Ok(ImageName(s))
        } else {
            Err(serde::de::Error::custom(format!(
                "image name '{s}' is not a repository name component \
                 (lowercase letters, digits, and . _ - between them)"
            )))
        }
    }
}

/// The Containerfile for each operating system, relative to the plan file.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Containerfiles {
    /// For the Linux builds.
    #[serde(default)]
    pub linux: Option<PathBuf>,
    /// For the Windows builds.
    #[serde(default)]
    pub windows: Option<PathBuf>,
}

/// The `linux:` section of an image.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinuxTargets {
    /// Architectures to build.
    #[serde(deserialize_with = "unique")]
    pub architectures: Vec<Arch>,
}

/// One Windows build to produce.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WindowsTarget {
    /// The Windows build number (17763, 20348, 26100, …).
    pub build: WindowsBuild,
    /// Base image for the Windows stage (the `WINDOWS_BASE` build arg); default: the plan's
    /// `windows_bases`, then Microsoft's nanoserver for that build.
    #[serde(default)]
    pub base: Option<String>,
}

/// The `windows:` section of an image.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WindowsTargets {
    /// Architectures to build.
    #[serde(deserialize_with = "unique")]
    pub architectures: Vec<Arch>,
    /// Builds to produce, each its own image (none for a HostProcess image).
    #[serde(default, deserialize_with = "unique_builds")]
    pub builds: Vec<WindowsTarget>,
    /// One HostProcess image per architecture instead of one image per build: built `FROM`
    /// the HostProcess base, without os.version (it runs on every build).
    #[serde(default)]
    pub hostprocess: bool,
    /// The HostProcess base of this image; default: the plan's `hostprocess_base`, then
    /// [`DEFAULT_HOSTPROCESS_BASE`]. Only with `hostprocess: true`.
    #[serde(default)]
    pub base: Option<String>,
}

/// One image of the plan.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImageSpec {
    /// Repository name under the push namespace.
    pub name: ImageName,
    /// Build context: a path relative to the plan file, or `${VAR}` (a path the user sets,
    /// e.g. the driver's source checkout).
    pub context: String,
    /// Containerfiles per OS.
    pub containerfiles: Containerfiles,
    /// Build args for every build of this image.
    #[serde(default)]
    pub build_args: BTreeMap<String, String>,
    /// Linux builds.
    #[serde(default)]
    pub linux: Option<LinuxTargets>,
    /// Windows builds.
    #[serde(default)]
    pub windows: Option<WindowsTargets>,
    /// The policy the list must pass: an embedded name or a file relative to the plan.
    pub policy: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PlanFile {
    #[serde(default)]
    windows_bases: BTreeMap<WindowsBuild, String>,
    #[serde(default)]
    hostprocess_base: Option<String>,
    #[serde(deserialize_with = "non_empty_images")]
    images: Vec<ImageSpec>,
}

fn unique_builds<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<WindowsTarget>, D::Error> {
    let items = Vec::<WindowsTarget>::deserialize(d)?;
    if items.is_empty() {
        return Err(serde::de::Error::custom("the list must not be empty"));
    }
    let mut seen = BTreeSet::new();
    for t in &items {
        if !seen.insert(t.build) {
            return Err(serde::de::Error::custom(format!(
                "build {} is listed twice",
                t.build
            )));
        }
    }
    Ok(items)
}

fn non_empty_images<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<ImageSpec>, D::Error> {
    let items = Vec::<ImageSpec>::deserialize(d)?;
    if items.is_empty() {
        return Err(serde::de::Error::custom("the plan lists no images"));
    }
    Ok(items)
}

/// The line of the `name: NAME` key of the `occurrence`-th image so named (0-based), for
/// errors found after parsing.
fn name_line(text: &str, name: &str, occurrence: usize) -> Option<usize> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| {
            let t = l.trim_start().trim_start_matches("- ").trim();
            t.strip_prefix("name:")
                .map(|v| v.trim().trim_matches(|c| c == '"' || c == '\'') == name)
                .unwrap_or(false)
        })
        .nth(occurrence)
        .map(|(i, _)| i + 1)
}

/// Where an image is in the plan: `line L: images[i]: `, or `images[i]: ` without a line.
fn image_at(text: &str, name: &ImageName, index: usize, occurrence: usize) -> String {
    match name_line(text, name.as_str(), occurrence) {
        Some(l) => format!("line {l}: images[{index}]: "),
        None => format!("images[{index}]: "),
    }
}

/// Checks what spans several keys of an image: unique names, something to build, a
/// Containerfile for each OS built.
fn validate_images(images: &[ImageSpec], text: &str) -> Result<(), ImagesProblem> {
    let mut seen: BTreeMap<&ImageName, usize> = BTreeMap::new();
    for (i, image) in images.iter().enumerate() {
        let count = seen.entry(&image.name).or_insert(0);
        let name = image.name.to_string();
        if *count > 0 {
            let at = image_at(text, &image.name, i, *count);
            return Err(ImagesProblem::Twice { at, name });
        }
        let at = image_at(text, &image.name, i, 0);
        *count += 1;
        if image.linux.is_none() && image.windows.is_none() {
            return Err(ImagesProblem::Nothing { at, name });
        }
        for (os, wanted, file) in [
            ("linux", image.linux.is_some(), &image.containerfiles.linux),
            (
                "windows",
                image.windows.is_some(),
                &image.containerfiles.windows,
            ),
        ] {
            if wanted && file.is_none() {
                return Err(ImagesProblem::NoContainerfile { at, name, os });
            }
        }
        if let Some(w) = &image.windows {
            let reason = match (w.hostprocess, w.builds.is_empty(), w.base.is_some()) {
                (true, false, _) => Some(
                    "a hostprocess image is one image for every Windows build: remove 'builds'",
                ),
                (false, true, _) => Some("'windows:' needs 'builds' (or 'hostprocess: true')"),
                (false, false, true) => Some(
                    "'windows.base' is the base of a hostprocess image; give each build its \
                     base with 'builds: [{build: N, base: REF}]'",
                ),
                _ => None,
            };
            if let Some(reason) = reason {
                return Err(ImagesProblem::Windows { at, name, reason });
            }
        }
    }
    Ok(())
}

/// What is wrong with the images of a plan beyond single keys; `at` is where
/// (`line L: images[i]: `).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ImagesProblem {
    /// Two images have the same name.
    #[error("{at}image '{name}' is listed twice")]
    Twice {
        /// Where.
        at: String,
        /// The name.
        name: String,
    },
    /// An image has neither `linux:` nor `windows:`.
    #[error("{at}image '{name}' builds nothing: add a 'linux:' or 'windows:' section")]
    Nothing {
        /// Where.
        at: String,
        /// The name.
        name: String,
    },
    /// A `windows:` section whose keys do not go together.
    #[error("{at}image '{name}': {reason}")]
    Windows {
        /// Where.
        at: String,
        /// The name.
        name: String,
        /// What is wrong.
        reason: &'static str,
    },
    /// An OS section without its Containerfile.
    #[error("{at}image '{name}' has a '{os}:' section but no 'containerfiles.{os}'")]
    NoContainerfile {
        /// Where.
        at: String,
        /// The name.
        name: String,
        /// `linux` or `windows`.
        os: &'static str,
    },
}

/// A plan that cannot be loaded, naming the file and the problem.
#[derive(Debug, Clone, thiserror::Error)]
pub enum PlanError {
    /// The file cannot be read, or is larger than the input limit.
    #[error("plan {origin}: {reason}")]
    Read {
        /// The plan file.
        origin: String,
        /// `cannot read`, or the limit it passed.
        reason: String,
        /// The I/O error behind it, if any.
        #[source]
        source: Option<Arc<std::io::Error>>,
    },
    /// The YAML does not describe a plan: the parser's message, with line and column.
    #[error("plan {origin}: {reason}")]
    Syntax {
        /// The plan file.
        origin: String,
        /// What is wrong, with line and column when known.
        reason: String,
    },
    /// The images do not go together.
    #[error("plan {origin}: {problem}")]
    Images {
        /// The plan file.
        origin: String,
        /// What is wrong.
        problem: ImagesProblem,
    },
    /// `--image` names no image of the plan.
    #[error("plan {origin}: no image named '{name}' (the plan has: {known})")]
    UnknownImage {
        /// The plan file.
        origin: String,
        /// The name asked for.
        name: String,
        /// The plan's images, comma-separated.
        known: String,
    },
}

/// A parsed plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildPlan {
    /// The plan file as given.
    pub path: PathBuf,
    /// Its directory: Containerfiles, relative contexts and policy files are relative to it.
    pub dir: PathBuf,
    /// Default Windows base per build.
    pub windows_bases: BTreeMap<WindowsBuild, String>,
    /// Default base of HostProcess images.
    pub hostprocess_base: Option<String>,
    /// The images, in file order.
    pub images: Vec<ImageSpec>,
}

impl BuildPlan {
    /// Parses plan YAML; `path` names it in errors and anchors relative paths.
    pub fn parse(text: &str, path: &Path) -> Result<BuildPlan, PlanError> {
        let origin = path.display().to_string();
        crate::yaml::check_yaml(text).map_err(|e| PlanError::Syntax {
            origin: origin.clone(),
            reason: e.to_string(),
        })?;
        let file: PlanFile = serde_yaml_ng::from_str(text).map_err(|e| {
            let reason = e.to_string();
            let reason = match e.location() {
                Some(l) if !reason.contains("line ") => {
                    format!("line {}, column {}: {reason}", l.line(), l.column())
                }
                _ => reason,
            };
            PlanError::Syntax {
                origin: origin.clone(),
                reason,
            }
        })?;
        validate_images(&file.images, text).map_err(|problem| PlanError::Images {
            origin: origin.clone(),
            problem,
        })?;
        let dir = path
            .parent()
            .map(Path::to_path_buf)
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or_else(|| PathBuf::from("."));
        Ok(BuildPlan {
            path: path.to_path_buf(),
            dir,
            windows_bases: file.windows_bases,
            hostprocess_base: file.hostprocess_base,
            images: file.images,
        })
    }

    /// Reads (at most `max_bytes`, `--max-input-size`) and parses the plan file.
    pub fn load(path: &Path, max_bytes: u64) -> Result<BuildPlan, PlanError> {
        let text = crate::input::read_file(path, max_bytes).map_err(|e| PlanError::Read {
            origin: path.display().to_string(),
            reason: e.reason,
            source: e.source.map(Arc::new),
        })?;
        BuildPlan::parse(&text, path)
    }

    /// The images named by `--image` (all when `names` is empty); an unknown name is an error
    /// listing the known ones.
    pub fn select(&self, names: &[String]) -> Result<Vec<&ImageSpec>, PlanError> {
        if names.is_empty() {
            return Ok(self.images.iter().collect());
        }
        names
            .iter()
            .map(|n| {
                self.images
                    .iter()
                    .find(|i| i.name.as_str() == n)
                    .ok_or_else(|| PlanError::UnknownImage {
                        origin: self.path.display().to_string(),
                        name: n.clone(),
                        known: self
                            .images
                            .iter()
                            .map(|i| i.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", "),
                    })
            })
            .collect()
    }

    /// The Windows base for one build of an image: the build's `base`, else the plan's
    /// `windows_bases`, else nanoserver for that build. `None` when nothing names one.
    pub fn windows_base(&self, target: &WindowsTarget) -> Option<String> {
        target
            .base
            .clone()
            .or_else(|| self.windows_bases.get(&target.build).cloned())
            .or_else(|| default_windows_base(target.build.0))
    }

    /// The base of a HostProcess image: its `windows.base`, else the plan's
    /// `hostprocess_base`, else [`DEFAULT_HOSTPROCESS_BASE`].
    pub fn hostprocess_base(&self, windows: &WindowsTargets) -> String {
        windows
            .base
            .clone()
            .or_else(|| self.hostprocess_base.clone())
            .unwrap_or_else(|| DEFAULT_HOSTPROCESS_BASE.to_string())
    }

    /// A path of the plan (Containerfile, policy file) resolved against the plan's directory.
    pub fn resolve(&self, path: &Path) -> PathBuf {
        if path.is_absolute() {
            path.to_path_buf()
        } else {
            self.dir.join(path)
        }
    }
}

/// The build context after `${VAR}` expansion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Context {
    /// A directory (relative contexts are joined to the plan's directory).
    Path(PathBuf),
    /// The context names variables the environment does not set.
    Unset {
        /// The context as written, e.g. `${AZUREFILE_CSI_SRC}`.
        written: String,
        /// The unset variables.
        missing: Vec<String>,
    },
}

/// A context that cannot be expanded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ContextError {
    /// `${` without `}`.
    #[error("context '{0}': '${{' without a closing '}}'")]
    Unclosed(String),
    /// `${…}` holds something other than a variable name.
    #[error("context '{context}': '{name}' is not a variable name")]
    NotAVariable {
        /// The context as written.
        context: String,
        /// What the braces hold.
        name: String,
    },
    /// The context expands to nothing.
    #[error("context is empty")]
    Empty,
}

/// Expands `${VAR}` in an image's `context` with `lookup` (the environment) and anchors a
/// relative result at the plan's directory.
pub fn expand_context(
    plan: &BuildPlan,
    context: &str,
    lookup: impl Fn(&str) -> Option<String>,
) -> Result<Context, ContextError> {
    let mut out = String::new();
    let mut missing = Vec::new();
    let mut rest = context;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            return Err(ContextError::Unclosed(context.to_string()));
        };
        let name = &after[..end];
        if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            return Err(ContextError::NotAVariable {
                context: context.to_string(),
                name: name.to_string(),
            });
        }
        match lookup(name).filter(|v| !v.is_empty()) {
            Some(v) => out.push_str(&v),
            None => missing.push(name.to_string()),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    if !missing.is_empty() {
        return Ok(Context::Unset {
            written: context.to_string(),
            missing,
        });
    }
    if out.is_empty() {
        return Err(ContextError::Empty);
    }
    Ok(Context::Path(plan.resolve(Path::new(&out))))
}

crate::error::input_errors!(PlanError);

#[cfg(test)]
mod tests {
    use super::*;

    const MINIMAL: &str = "\
images:
  - name: driver
    context: src
    containerfiles:
      windows: driver/Containerfile.windows
    windows:
      architectures: [amd64]
      builds:
        - build: 17763
        - build: 20348
          base: mirror.example/nanoserver:ltsc2022
    policy: openshift
";

    #[test]
    fn plan_files_are_read_up_to_the_input_limit() {
        let err = BuildPlan::load(Path::new("/dev/zero"), 4096)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("plan /dev/zero") && err.contains("larger than the input limit of 4 KiB"),
            "{err}"
        );
        let err = BuildPlan::load(Path::new("/nonexistent/plan.yaml"), 4096).unwrap_err();
        assert_eq!(err.to_string(), "plan /nonexistent/plan.yaml: cannot read");
    }

    #[test]
    fn parses_a_plan_and_resolves_bases() {
        let plan = BuildPlan::parse(MINIMAL, Path::new("buildah/images.yaml")).unwrap();
        assert_eq!(plan.dir, Path::new("buildah"));
        let image = &plan.images[0];
        assert_eq!(image.name.as_str(), "driver");
        let w = image.windows.as_ref().unwrap();
        assert_eq!(
            plan.windows_base(&w.builds[0]).as_deref(),
            Some("mcr.microsoft.com/windows/nanoserver:ltsc2019")
        );
        assert_eq!(
            plan.windows_base(&w.builds[1]).as_deref(),
            Some("mirror.example/nanoserver:ltsc2022")
        );
        let with_default = format!("windows_bases:\n  17763: m.example/ns:1809\n{MINIMAL}");
        let plan = BuildPlan::parse(&with_default, Path::new("p.yaml")).unwrap();
        assert_eq!(plan.dir, Path::new("."));
        assert_eq!(
            plan.windows_base(&plan.images[0].windows.as_ref().unwrap().builds[0])
                .as_deref(),
            Some("m.example/ns:1809")
        );
        let odd = WindowsTarget {
            build: WindowsBuild(25398),
            base: None,
        };
        assert_eq!(plan.windows_base(&odd), None);
        assert_eq!(osversion_arg(20348), "ltsc2022");
        assert_eq!(osversion_arg(25398), "25398");
    }

    #[test]
    fn rejects_bad_plans_with_location() {
        let cases = [
            (format!("images: {}", "[".repeat(100)), "line 1", "nest"),
            (
                MINIMAL.replace("    policy:", "    polcy:"),
                "line 12",
                "unknown field `polcy`",
            ),
            (
                MINIMAL.replace("build: 17763", "build: 99"),
                "line 9",
                "99 is not a Windows build",
            ),
            (
                MINIMAL.replace(
                    "- build: 20348\n          base: mirror.example/nanoserver:ltsc2022",
                    "- build: 17763",
                ),
                "line 7",
                "build 17763 is listed twice",
            ),
            (
                MINIMAL.replace("name: driver", "name: Driver"),
                "line 2",
                "not a repository name component",
            ),
            (
                MINIMAL.replace("[amd64]", "[x86]"),
                "line 7",
                "unknown architecture 'x86'",
            ),
            (
                MINIMAL.replace("      windows: driver", "      linux: driver"),
                "line 2",
                "no 'containerfiles.windows'",
            ),
            (
                MINIMAL.replace("          base: mirror", "          bas: mirror"),
                "line 11",
                "unknown field `bas`",
            ),
            (
                format!(
                    "{MINIMAL}  - name: driver\n    context: x\n    containerfiles: {{}}\n    linux: {{architectures: [amd64]}}\n    policy: p\n"
                ),
                "line 13: images[1]",
                "'driver' is listed twice",
            ),
            ("images: []\n".to_string(), "line 1", "lists no images"),
            ("imgs: []\n".to_string(), "line 1", "unknown field `imgs`"),
            (
                "images:\n  - name: a\n    context: .\n    containerfiles: {}\n    policy: p\n"
                    .to_string(),
                "line 2",
                "builds nothing",
            ),
        ];
        let mut bad = Vec::new();
        for (text, line, want) in cases {
            let err = BuildPlan::parse(&text, Path::new("t.yaml"))
                .unwrap_err()
                .to_string();
            if !(err.starts_with("plan t.yaml: ") && err.contains(line) && err.contains(want)) {
                bad.push(format!("want {line} {want:?}\n  got {err}"));
            }
        }
        assert!(bad.is_empty(), "{}", bad.join("\n"));
    }

    const HOSTPROCESS: &str = "\
images:
  - name: proxy
    context: src
    containerfiles:
      windows: proxy/Containerfile.windows
    windows:
      architectures: [amd64]
      hostprocess: true
    policy: openshift-hostprocess
";

    #[test]
    fn hostprocess_images_have_one_base_and_no_builds() {
        let plan = BuildPlan::parse(HOSTPROCESS, Path::new("p.yaml")).unwrap();
        let w = plan.images[0].windows.as_ref().unwrap();
        assert!(w.hostprocess && w.builds.is_empty());
        assert_eq!(plan.hostprocess_base(w), DEFAULT_HOSTPROCESS_BASE);
        let with_plan_base = format!("hostprocess_base: m.example/hpc:1\n{HOSTPROCESS}");
        let plan = BuildPlan::parse(&with_plan_base, Path::new("p.yaml")).unwrap();
        let w = plan.images[0].windows.as_ref().unwrap();
        assert_eq!(plan.hostprocess_base(w), "m.example/hpc:1");
        let own = with_plan_base.replace(
            "hostprocess: true",
            "hostprocess: true\n      base: own.example/hpc:2",
        );
        let plan = BuildPlan::parse(&own, Path::new("p.yaml")).unwrap();
        let w = plan.images[0].windows.as_ref().unwrap();
        assert_eq!(plan.hostprocess_base(w), "own.example/hpc:2");
        let cases = [
            (
                HOSTPROCESS.replace(
                    "hostprocess: true",
                    "hostprocess: true\n      builds: [{build: 20348}]",
                ),
                "a hostprocess image is one image for every Windows build: remove 'builds'",
            ),
            (
                HOSTPROCESS.replace("      hostprocess: true\n", ""),
                "'windows:' needs 'builds' (or 'hostprocess: true')",
            ),
            (
                HOSTPROCESS.replace(
                    "hostprocess: true",
                    "builds: [{build: 20348}]\n      base: x.example/b:1",
                ),
                "'windows.base' is the base of a hostprocess image",
            ),
        ];
        for (text, want) in cases {
            let err = BuildPlan::parse(&text, Path::new("t.yaml"))
                .unwrap_err()
                .to_string();
            assert!(
                err.contains("line 2: images[0]: image 'proxy': ") && err.contains(want),
                "{want}: got {err}"
            );
        }
    }

    #[test]
    fn selects_images_by_name() {
        let plan = BuildPlan::parse(MINIMAL, Path::new("p.yaml")).unwrap();
        assert_eq!(plan.select(&[]).unwrap().len(), 1);
        assert_eq!(
            plan.select(&["driver".into()]).unwrap()[0].name.as_str(),
            "driver"
        );
        let err = plan.select(&["nope".into()]).unwrap_err().to_string();
        assert!(
            err.contains("no image named 'nope'") && err.contains("driver"),
            "{err}"
        );
    }

    #[test]
    fn expands_context_variables() {
        let plan = BuildPlan::parse(MINIMAL, Path::new("buildah/images.yaml")).unwrap();
        let env = |k: &str| (k == "SRC").then(|| "/src/driver".to_string());
        let cases: [(&str, Result<Context, &str>); 6] = [
            ("${SRC}", Ok(Context::Path("/src/driver".into()))),
            ("${SRC}/sub", Ok(Context::Path("/src/driver/sub".into()))),
            ("ctx", Ok(Context::Path("buildah/ctx".into()))),
            (
                "${NOPE}/x",
                Ok(Context::Unset {
                    written: "${NOPE}/x".into(),
                    missing: vec!["NOPE".into()],
                }),
            ),
            ("${SRC", Err("without a closing")),
            ("${A-B}", Err("not a variable name")),
        ];
        for (input, want) in cases {
            let got = expand_context(&plan, input, env);
            match (got, want) {
                (Ok(g), Ok(w)) => assert_eq!(g, w, "{input}"),
                (Err(g), Err(w)) => assert!(g.to_string().contains(w), "{input}: {g}"),
                (g, w) => panic!("{input}: got {g:?}, want {w:?}"),
            }
        }
    }
}
