//! `imgcheck build --check`: lints the plan and its Containerfiles without building.

use std::fmt;
use std::path::Path;

use crate::builder::containerfile::{self, AUTOMATIC_ARGS};
use crate::builder::plan::{BuildPlan, Context, ImageSpec, expand_context};
use crate::error::one_line;
use crate::policy::{EMBEDDED, Policy, PolicyError};
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
pub fn image_policy(plan: &BuildPlan, image: &ImageSpec) -> Result<Policy, PolicyError> {
    let name = image.policy.as_str();
    let target = if EMBEDDED.iter().any(|(n, _)| *n == name) {
        name.to_string()
    } else {
        plan.resolve(Path::new(name)).display().to_string()
    };
    Policy::load(&target)
}

/// Checks the selected images of a plan; `env` looks up context variables.
pub fn check(
    plan: &BuildPlan,
    images: &[&ImageSpec],
    env: &dyn Fn(&str) -> Option<String>,
) -> Vec<CheckFinding> {
    let mut out = Vec::new();
    let plan_file = plan.path.display().to_string();
    for image in images {
        let mut found = Findings {
            out: &mut out,
            plan_file: &plan_file,
            image: image.name.as_str(),
        };
        context(plan, image, env, &mut found);
        build_args(image, &mut found);
        containerfiles(plan, image, &mut found);
        windows_bases(plan, image, &mut found);
        match image_policy(plan, image) {
            Ok(policy) => {
                policy_builds(image, &policy, &mut found);
                policy_architectures(image, &policy, &mut found);
            }
            Err(e) => found.plan(Level::Error, one_line(&e)),
        }
    }
    out
}

/// Where the findings about one image go.
struct Findings<'a> {
    out: &'a mut Vec<CheckFinding>,
    plan_file: &'a str,
    image: &'a str,
}

impl Findings<'_> {
    fn push(&mut self, level: Level, file: &str, line: Option<usize>, message: String) {
        self.out.push(CheckFinding {
            level,
            file: file.to_string(),
            line,
            image: self.image.to_string(),
            message,
        });
    }

    /// A finding about the plan file itself.
    fn plan(&mut self, level: Level, message: String) {
        let file = self.plan_file.to_string();
        self.push(level, &file, None, message);
    }
}

/// The context: a directory, or variables to set before building (a note).
fn context(
    plan: &BuildPlan,
    image: &ImageSpec,
    env: &dyn Fn(&str) -> Option<String>,
    found: &mut Findings,
) {
    match expand_context(plan, &image.context, env) {
        Err(e) => found.plan(Level::Error, e.to_string()),
        Ok(Context::Unset { written, missing }) => found.plan(
            Level::Note,
            format!(
                "context {written}: set {} to the source checkout before building",
                missing.join(", ")
            ),
        ),
        Ok(Context::Path(p)) if !p.is_dir() => found.plan(
            Level::Error,
            format!("context {} is not a directory", p.display()),
        ),
        Ok(Context::Path(_)) => {}
    }
}

/// Build args the plan must not set: imgcheck sets them per platform.
fn build_args(image: &ImageSpec, found: &mut Findings) {
    for key in image.build_args.keys() {
        if AUTOMATIC_ARGS.contains(&key.as_str()) {
            found.plan(
                Level::Error,
                format!(
                    "build arg {key} is set by imgcheck build for each platform; remove it \
                     (Windows bases go in 'windows_bases' or a build's 'base')"
                ),
            );
        }
    }
}

/// The Containerfile of each OS built, read and linted.
fn containerfiles(plan: &BuildPlan, image: &ImageSpec, found: &mut Findings) {
    let args: Vec<&str> = image.build_args.keys().map(String::as_str).collect();
    let linux = image
        .linux
        .as_ref()
        .and(image.containerfiles.linux.as_ref());
    let windows = image
        .windows
        .as_ref()
        .and(image.containerfiles.windows.as_ref());
    for (is_windows, file) in [(false, linux), (true, windows)] {
        let Some(file) = file else { continue };
        let path = plan.resolve(file);
        let shown = path.display().to_string();
        match std::fs::read_to_string(&path) {
            Ok(text) => {
                for e in containerfile::lint(&text, is_windows, &args) {
                    found.push(Level::Error, &shown, e.line, e.message);
                }
            }
            Err(e) => found.plan(Level::Error, format!("Containerfile {shown}: {e}")),
        }
    }
}

/// Each Windows build has a base, and the base is a reference.
fn windows_bases(plan: &BuildPlan, image: &ImageSpec, found: &mut Findings) {
    let Some(w) = &image.windows else { return };
    if w.hostprocess
        && let Err(e) = plan.hostprocess_base(w).parse::<ImageRef>()
    {
        found.plan(Level::Error, format!("HostProcess base: {}", one_line(&e)));
    }
    for t in &w.builds {
        match plan.windows_base(t) {
            None => found.plan(
                Level::Error,
                format!(
                    "Windows build {} has no base image: set 'base:' on it or \
                     'windows_bases: {{{}: …}}'",
                    t.build, t.build
                ),
            ),
            Some(b) => {
                if let Err(e) = b.parse::<ImageRef>() {
                    found.plan(
                        Level::Error,
                        format!("Windows base for build {}: {}", t.build, one_line(&e)),
                    );
                }
            }
        }
    }
}

/// The planned Windows builds are exactly the policy's (a HostProcess image runs on every
/// build, so it covers them all).
fn policy_builds(image: &ImageSpec, policy: &Policy, found: &mut Findings) {
    if image.windows.as_ref().is_some_and(|w| w.hostprocess) {
        return;
    }
    let planned: Vec<u16> = image
        .windows
        .iter()
        .flat_map(|w| w.builds.iter().map(|t| t.build.0))
        .collect();
    let required = policy.windows_builds();
    for b in planned.iter().filter(|b| !required.contains(b)) {
        found.plan(
            Level::Error,
            format!(
                "Windows build {b} is not in policy '{}' (builds: {}); add it to the \
                 policy or drop it from the plan",
                policy.name,
                list(&required)
            ),
        );
    }
    for b in required.iter().filter(|b| !planned.contains(b)) {
        found.plan(
            Level::Error,
            format!(
                "policy '{}' requires Windows build {b}, which the plan does not build \
                 (verify would report no-match)",
                policy.name
            ),
        );
    }
}

/// The plan builds every architecture the policy requires, per OS.
fn policy_architectures(image: &ImageSpec, policy: &Policy, found: &mut Findings) {
    let pairs = [
        (
            "Linux",
            image.linux.as_ref().map(|l| &l.architectures),
            policy.linux.as_ref().map(|l| &l.architectures),
        ),
        (
            "Windows",
            image.windows.as_ref().map(|w| &w.architectures),
            policy.windows.as_ref().map(|w| &w.architectures),
        ),
    ];
    for (os, planned, required) in pairs {
        for a in required.into_iter().flatten() {
            if !planned.is_some_and(|p| p.contains(a)) {
                found.plan(
                    Level::Error,
                    format!(
                        "policy '{}' requires {os} {a}, which the plan does not build",
                        policy.name
                    ),
                );
            }
        }
    }
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
