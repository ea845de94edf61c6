//! `imgcheck build --check`: lints the plan and its Containerfiles without building.

use std::fmt;
use std::path::Path;

use crate::build::containerfile::{self, AUTOMATIC_ARGS};
use crate::build::plan::{Context, ImageSpec, Plan, expand_context};
use crate::policy::{EMBEDDED, Policy};
use crate::reference::ImageRef;

/// How serious a check finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// The plan cannot be built as written.
    Error,
    /// Something to know before building (e.g. a context variable to set).
    Note,
}

/// One problem found by the check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckFinding {
    /// Error or note.
    pub level: Level,
    /// The file concerned (plan, Containerfile or policy).
    pub file: String,
    /// 1-based line, when known.
    pub line: Option<usize>,
    /// The image concerned.
    pub image: String,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for CheckFinding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let level = match self.level {
            Level::Error => "error",
            Level::Note => "note",
        };
        match self.line {
            Some(l) => write!(f, "{}:{l}: {level}: ", self.file)?,
            None => write!(f, "{}: {level}: ", self.file)?,
        }
        write!(f, "[{}] {}", self.image, self.message)
    }
}

/// The policy an image names: an embedded name, else a file relative to the plan.
pub fn image_policy(plan: &Plan, image: &ImageSpec) -> Result<Policy, String> {
    let name = image.policy.as_str();
    let target = if EMBEDDED.iter().any(|(n, _)| *n == name) {
        name.to_string()
    } else {
        plan.resolve(Path::new(name)).display().to_string()
    };
    Policy::load(&target).map_err(|e| e.to_string())
}

/// Checks the selected images of a plan; `env` looks up context variables.
pub fn check(
    plan: &Plan,
    images: &[&ImageSpec],
    env: &dyn Fn(&str) -> Option<String>,
) -> Vec<CheckFinding> {
    let mut out = Vec::new();
    let plan_file = plan.path.display().to_string();
    for image in images {
        let mut push = |level, file: &str, line, message: String| {
            out.push(CheckFinding {
                level,
                file: file.to_string(),
                line,
                image: image.name.to_string(),
                message,
            })
        };
        match expand_context(plan, &image.context, env) {
            Err(e) => push(Level::Error, &plan_file, None, e),
            Ok(Context::Unset { written, missing }) => push(
                Level::Note,
                &plan_file,
                None,
                format!(
                    "context {written}: set {} to the source checkout before building",
                    missing.join(", ")
                ),
            ),
            Ok(Context::Path(p)) if !p.is_dir() => push(
                Level::Error,
                &plan_file,
                None,
                format!("context {} is not a directory", p.display()),
            ),
            Ok(Context::Path(_)) => {}
        }
        for key in image.build_args.keys() {
            if AUTOMATIC_ARGS.contains(&key.as_str()) {
                push(
                    Level::Error,
                    &plan_file,
                    None,
                    format!(
                        "build arg {key} is set by imgcheck build for each platform; remove it \
                         (Windows bases go in 'windows_bases' or a build's 'base')"
                    ),
                );
            }
        }
        let args: Vec<&str> = image.build_args.keys().map(String::as_str).collect();
        for (windows, file) in [
            (
                false,
                image
                    .linux
                    .as_ref()
                    .and(image.containerfiles.linux.as_ref()),
            ),
            (
                true,
                image
                    .windows
                    .as_ref()
                    .and(image.containerfiles.windows.as_ref()),
            ),
        ] {
            let Some(file) = file else { continue };
            let path = plan.resolve(file);
            let shown = path.display().to_string();
            match std::fs::read_to_string(&path) {
                Ok(text) => {
                    for e in containerfile::lint(&text, windows, &args) {
                        push(Level::Error, &shown, e.line, e.message);
                    }
                }
                Err(e) => push(
                    Level::Error,
                    &plan_file,
                    None,
                    format!("Containerfile {shown}: {e}"),
                ),
            }
        }
        if let Some(w) = &image.windows {
            for t in &w.builds {
                match plan.windows_base(t) {
                    None => push(
                        Level::Error,
                        &plan_file,
                        None,
                        format!(
                            "Windows build {} has no base image: set 'base:' on it or \
                             'windows_bases: {{{}: …}}'",
                            t.build, t.build
                        ),
                    ),
                    Some(b) => {
                        if let Err(e) = b.parse::<ImageRef>() {
                            push(
                                Level::Error,
                                &plan_file,
                                None,
                                format!("Windows base for build {}: {e}", t.build),
                            );
                        }
                    }
                }
            }
        }
        let policy = match image_policy(plan, image) {
            Ok(p) => p,
            Err(e) => {
                push(Level::Error, &plan_file, None, e);
                continue;
            }
        };
        let planned_builds: Vec<u16> = image
            .windows
            .iter()
            .flat_map(|w| w.builds.iter().map(|t| t.build.0))
            .collect();
        let policy_builds = policy.windows_builds();
        for b in &planned_builds {
            if !policy_builds.contains(b) {
                push(
                    Level::Error,
                    &plan_file,
                    None,
                    format!(
                        "Windows build {b} is not in policy '{}' (builds: {}); add it to the \
                         policy or drop it from the plan",
                        policy.name,
                        list(&policy_builds)
                    ),
                );
            }
        }
        for b in &policy_builds {
            if !planned_builds.contains(b) {
                push(
                    Level::Error,
                    &plan_file,
                    None,
                    format!(
                        "policy '{}' requires Windows build {b}, which the plan does not build \
                         (verify would report no-match)",
                        policy.name
                    ),
                );
            }
        }
        let arch_pairs = [
            (
                "Linux",
                image
                    .linux
                    .as_ref()
                    .map(|l| l.architectures.clone())
                    .unwrap_or_default(),
                policy
                    .linux
                    .as_ref()
                    .map(|l| l.architectures.clone())
                    .unwrap_or_default(),
            ),
            (
                "Windows",
                image
                    .windows
                    .as_ref()
                    .map(|l| l.architectures.clone())
                    .unwrap_or_default(),
                policy
                    .windows
                    .as_ref()
                    .map(|l| l.architectures.clone())
                    .unwrap_or_default(),
            ),
        ];
        for (os, planned, required) in arch_pairs {
            for a in &required {
                if !planned.contains(a) {
                    push(
                        Level::Error,
                        &plan_file,
                        None,
                        format!(
                            "policy '{}' requires {os} {a}, which the plan does not build",
                            policy.name
                        ),
                    );
                }
            }
        }
    }
    out
}

fn list(items: &[u16]) -> String {
    if items.is_empty() {
        return "none".to_string();
    }
    items
        .iter()
        .map(u16::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}
