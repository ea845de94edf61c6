//! From plan to build jobs: one per image × platform (× Windows build), each with its
//! `buildah build` spec, its per-platform push destination and its log file; and the list
//! each image's jobs make. Pure but for the policy files the lists name.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::builder::buildah::{BuildSpec, Passthrough, push_command, push_layout_command};
use crate::builder::check::image_policy;
use crate::builder::compose::stage::StagePlan;
use crate::builder::plan::{
    BuildPlan, Context, ContextError, ImageSpec, expand_context, osversion_arg,
};
use crate::digest::Digest;
use crate::policy::{Policy, PolicyError, WindowsBuild};
use crate::reference::{ImageRef, ReferenceError, RegistryRef};

/// What one job builds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildTarget {
    /// `linux` or `windows`.
    pub os: &'static str,
    /// CPU architecture.
    pub arch: String,
    /// Windows build number.
    pub build: Option<u16>,
    /// Windows base image.
    pub base: Option<String>,
    /// A HostProcess image: one for every Windows build, no os.version.
    pub hostprocess: bool,
}

impl BuildTarget {
    /// `linux-amd64`, `windows-amd64-20348`: used in tags and file names.
    pub fn slug(&self) -> String {
        match (self.build, self.hostprocess) {
            (Some(b), _) => format!("{}-{}-{b}", self.os, self.arch),
            (None, true) => format!("{}-{}-hostprocess", self.os, self.arch),
            (None, false) => format!("{}-{}", self.os, self.arch),
        }
    }

    /// `--platform` value.
    pub fn platform(&self) -> String {
        format!("{}/{}", self.os, self.arch)
    }

    /// `linux/amd64`, `windows/amd64 20348` for people.
    pub fn label(&self) -> String {
        match (self.build, self.hostprocess) {
            (Some(b), _) => format!("{} {b}", self.platform()),
            (None, true) => format!("{} hostprocess", self.platform()),
            (None, false) => self.platform(),
        }
    }
}

/// One build job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Job {
    /// The image (plan name).
    pub image: String,
    /// What it builds.
    pub target: BuildTarget,
    /// The `buildah build` to run.
    pub spec: BuildSpec,
    /// Where the per-platform image is pushed: `REGISTRY/NAMESPACE/IMAGE:TAG-SLUG`.
    pub push_to: String,
    /// Its log file.
    pub log: PathBuf,
    /// Where `buildah push` writes the pushed manifest's digest.
    pub digestfile: PathBuf,
    /// The layers of its Windows base (filled in once the base is read): the layers of the
    /// built image after these are the ones its Windows stage added.
    pub base_layers: Vec<Digest>,
    /// The image of its Windows base, pinned (filled in once the base is read).
    pub base_image: Option<RegistryRef>,
    /// Set when its Windows stage is composed without Buildah (`builder::compose`):
    /// `spec` then builds only the stage's files, pushed to a local layout.
    pub compose: Option<ComposeJob>,
    /// How its Windows stage is made and why, for the progress and the job's log.
    pub stage_note: Option<String>,
}

impl Job {
    /// The `buildah push` of the built image `image`: to the job's per-platform tag, or, for
    /// a composed Windows stage, its files to the local layout.
    pub fn push_command(&self, image: &str, pass: &Passthrough) -> Vec<String> {
        match &self.compose {
            Some(c) => push_layout_command(image, &c.files, &self.digestfile, pass),
            None => push_command(image, &self.push_to, &self.digestfile, pass),
        }
    }
}

/// A Windows job whose stage imgcheck composes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ComposeJob {
    /// The stage.
    pub plan: StagePlan,
    /// The OCI layout `buildah push` writes the stage's files image to.
    pub files: PathBuf,
}

/// Settings shared by every job of a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobSettings {
    /// `REGISTRY/NAMESPACE` to push to (a trailing `/` is ignored).
    pub push: String,
    /// Tag of the manifest list; per-platform images get `TAG-SLUG`.
    pub tag: String,
    /// Directory for logs, image-ID and digest files.
    pub log_dir: PathBuf,
    /// `--timestamp` for every build (`SOURCE_DATE_EPOCH`).
    pub timestamp: Option<u64>,
}

/// The list reference of an image: `REGISTRY/NAMESPACE/IMAGE:TAG`.
pub fn list_reference(settings: &JobSettings, image: &str) -> String {
    format!(
        "{}/{image}:{}",
        settings.push.trim_end_matches('/'),
        settings.tag
    )
}

/// Why the jobs of a plan, or its images' lists, cannot be made.
#[derive(Debug, Clone, thiserror::Error)]
pub enum JobsError {
    /// An image's context does not expand.
    #[error("image '{0}'")]
    Context(String, #[source] ContextError),
    /// A Windows build has no base image.
    #[error("image '{image}': Windows build {build} has no base image")]
    NoBase {
        /// The image.
        image: String,
        /// The build.
        build: WindowsBuild,
    },
    /// `--push` and `--tag` do not make a list reference.
    #[error("--push {push} / --tag {tag}")]
    Destination {
        /// `--push` as given.
        push: String,
        /// `--tag` as given.
        tag: String,
        /// Why the reference does not parse.
        #[source]
        source: Arc<ReferenceError>,
    },
    /// `--push` is not `REGISTRY/NAMESPACE`.
    #[error("--push {push}: expected REGISTRY/NAMESPACE")]
    NotANamespace {
        /// `--push` as given.
        push: String,
    },
    /// An image's policy cannot be loaded.
    #[error(transparent)]
    Policy(#[from] PolicyError),
    /// Contexts name environment variables that are not set: image → variables.
    #[error("set the build context variables first: {}", unset_list(.0))]
    UnsetContexts(Vec<(String, Vec<String>)>),
}

fn unset_list(unset: &[(String, Vec<String>)]) -> String {
    unset
        .iter()
        .map(|(image, vars)| format!("{image} needs {}", vars.join(", ")))
        .collect::<Vec<_>>()
        .join("; ")
}

/// The jobs for `images`. A context whose variables are unset becomes a `${VAR}` placeholder
/// (fine for a dry run; a real run refuses it first with [`unset_contexts`]).
pub fn plan_jobs(
    plan: &BuildPlan,
    images: &[&ImageSpec],
    settings: &JobSettings,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<Job>, JobsError> {
    let mut jobs = Vec::new();
    for image in images {
        let context = match expand_context(plan, &image.context, env)
            .map_err(|e| JobsError::Context(image.name.to_string(), e))?
        {
            Context::Path(p) => p.display().to_string(),
            Context::Unset { written, .. } => written,
        };
        for (file, target) in targets(plan, image)? {
            jobs.push(job(plan, image, file, target, &context, settings));
        }
    }
    Ok(jobs)
}

/// What an image builds, each with its Containerfile: Linux architectures, then Windows
/// architectures × builds (or, for a HostProcess image, one per architecture).
fn targets<'p>(
    plan: &BuildPlan,
    image: &'p ImageSpec,
) -> Result<Vec<(&'p PathBuf, BuildTarget)>, JobsError> {
    let mut targets = Vec::new();
    if let (Some(l), Some(file)) = (&image.linux, &image.containerfiles.linux) {
        for a in &l.architectures {
            let target = BuildTarget {
                os: "linux",
                arch: a.to_string(),
                build: None,
                base: None,
                hostprocess: false,
            };
            targets.push((file, target));
        }
    }
    if let (Some(w), Some(file)) = (&image.windows, &image.containerfiles.windows) {
        for a in w.architectures.iter().filter(|_| w.hostprocess) {
            let target = BuildTarget {
                os: "windows",
                arch: a.to_string(),
                build: None,
                base: Some(plan.hostprocess_base(w)),
                hostprocess: true,
            };
            targets.push((file, target));
        }
        for a in &w.architectures {
            for t in &w.builds {
                let base = plan.windows_base(t).ok_or_else(|| JobsError::NoBase {
                    image: image.name.to_string(),
                    build: t.build,
                })?;
                let target = BuildTarget {
                    os: "windows",
                    arch: a.to_string(),
                    build: Some(t.build.0),
                    base: Some(base),
                    hostprocess: false,
                };
                targets.push((file, target));
            }
        }
    }
    Ok(targets)
}

/// The job building `target` of `image` from `file`.
fn job(
    plan: &BuildPlan,
    image: &ImageSpec,
    file: &Path,
    target: BuildTarget,
    context: &str,
    settings: &JobSettings,
) -> Job {
    let slug = target.slug();
    let stem = format!("{}-{slug}", image.name);
    let mut build_args: Vec<(String, String)> = image
        .build_args
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    build_args.push(("TARGETOS".into(), target.os.into()));
    build_args.push(("TARGETARCH".into(), target.arch.clone()));
    if let Some(base) = &target.base {
        build_args.push(("WINDOWS_BASE".into(), base.clone()));
    }
    if let Some(build) = target.build {
        build_args.push(("OSVERSION".into(), osversion_arg(build)));
    }
    let log_dir: &Path = &settings.log_dir;
    Job {
        image: image.name.to_string(),
        spec: BuildSpec {
            platform: target.platform(),
            os_version: None,
            timestamp: settings.timestamp,
            build_args,
            containerfile: plan.resolve(file),
            context: context.to_string(),
            tag: format!("localhost/imgcheck-build/{}:{slug}", image.name),
            iidfile: log_dir.join(format!("{stem}.iid")),
        },
        push_to: format!(
            "{}/{}:{}-{slug}",
            settings.push.trim_end_matches('/'),
            image.name,
            settings.tag
        ),
        log: log_dir.join(format!("{stem}.log")),
        digestfile: log_dir.join(format!("{stem}.digest")),
        base_layers: Vec::new(),
        base_image: None,
        compose: None,
        stage_note: None,
        target,
    }
}

/// The list of each image: its name, its reference `REGISTRY/NAMESPACE/IMAGE:TAG` and the
/// policy it must pass. `settings.push` is `--push` as given.
pub fn image_lists(
    plan: &BuildPlan,
    images: &[&ImageSpec],
    settings: &JobSettings,
) -> Result<Vec<(String, RegistryRef, Policy)>, JobsError> {
    let mut lists = Vec::new();
    for image in images {
        let list = list_reference(settings, image.name.as_str());
        let reference = match list.parse::<ImageRef>() {
            Ok(ImageRef::Registry(r)) if r.digest.is_none() => r,
            Ok(_) => {
                return Err(JobsError::NotANamespace {
                    push: settings.push.clone(),
                });
            }
            Err(e) => {
                return Err(JobsError::Destination {
                    push: settings.push.clone(),
                    tag: settings.tag.clone(),
                    source: Arc::new(e),
                });
            }
        };
        let policy = image_policy(plan, image)?;
        lists.push((image.name.to_string(), reference, policy));
    }
    Ok(lists)
}

/// Images whose context names unset variables, with the variables: a real build needs them.
pub fn unset_contexts(
    plan: &BuildPlan,
    images: &[&ImageSpec],
    env: &dyn Fn(&str) -> Option<String>,
) -> Vec<(String, Vec<String>)> {
    images
        .iter()
        .filter_map(|i| match expand_context(plan, &i.context, env) {
            Ok(Context::Unset { missing, .. }) => Some((i.name.to_string(), missing)),
            _ => None,
        })
        .collect()
}

/// Refuses a real build while a context names unset variables.
pub fn require_contexts(
    plan: &BuildPlan,
    images: &[&ImageSpec],
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<(), JobsError> {
    let unset = unset_contexts(plan, images, env);
    if unset.is_empty() {
        Ok(())
    } else {
        Err(JobsError::UnsetContexts(unset))
    }
}

crate::error::input_errors!(JobsError);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builder::buildah::{Passthrough, build_command, shell_line};

    const PLAN: &str = "\
windows_bases:
  20348: mirror.example/windows/nanoserver:ltsc2022
images:
  - name: driver
    context: ${SRC}
    containerfiles:
      linux: driver/Containerfile.linux
      windows: driver/Containerfile.windows
    build_args:
      BUILDER: golang:1.24
    linux:
      architectures: [amd64, arm64]
    windows:
      architectures: [amd64]
      builds:
        - build: 17763
        - build: 20348
    policy: openshift
";

    #[test]
    fn one_job_per_platform_and_build() {
        let plan = BuildPlan::parse(PLAN, Path::new("buildah/images.yaml")).unwrap();
        let settings = JobSettings {
            push: "reg.example:5000/csi/".into(),
            tag: "v1".into(),
            log_dir: "/logs".into(),
            timestamp: None,
        };
        let images = plan.select(&[]).unwrap();
        let env = |k: &str| (k == "SRC").then(|| "/src/driver".to_string());
        let jobs = plan_jobs(&plan, &images, &settings, &env).unwrap();
        let got: Vec<(String, String, String)> = jobs
            .iter()
            .map(|j| {
                (
                    j.target.label(),
                    j.push_to.clone(),
                    shell_line(&build_command(&j.spec, &Passthrough::default())),
                )
            })
            .collect();
        let want = [
            (
                "linux/amd64",
                "reg.example:5000/csi/driver:v1-linux-amd64",
                "buildah build --platform=linux/amd64 --build-arg BUILDER=golang:1.24 --build-arg TARGETOS=linux --build-arg TARGETARCH=amd64 --iidfile /logs/driver-linux-amd64.iid -t localhost/imgcheck-build/driver:linux-amd64 -f buildah/driver/Containerfile.linux /src/driver",
            ),
            (
                "linux/arm64",
                "reg.example:5000/csi/driver:v1-linux-arm64",
                "buildah build --platform=linux/arm64 --build-arg BUILDER=golang:1.24 --build-arg TARGETOS=linux --build-arg TARGETARCH=arm64 --iidfile /logs/driver-linux-arm64.iid -t localhost/imgcheck-build/driver:linux-arm64 -f buildah/driver/Containerfile.linux /src/driver",
            ),
            (
                "windows/amd64 17763",
                "reg.example:5000/csi/driver:v1-windows-amd64-17763",
                "buildah build --platform=windows/amd64 --build-arg BUILDER=golang:1.24 --build-arg TARGETOS=windows --build-arg TARGETARCH=amd64 --build-arg WINDOWS_BASE=mcr.microsoft.com/windows/nanoserver:ltsc2019 --build-arg OSVERSION=ltsc2019 --iidfile /logs/driver-windows-amd64-17763.iid -t localhost/imgcheck-build/driver:windows-amd64-17763 -f buildah/driver/Containerfile.windows /src/driver",
            ),
            (
                "windows/amd64 20348",
                "reg.example:5000/csi/driver:v1-windows-amd64-20348",
                "buildah build --platform=windows/amd64 --build-arg BUILDER=golang:1.24 --build-arg TARGETOS=windows --build-arg TARGETARCH=amd64 --build-arg WINDOWS_BASE=mirror.example/windows/nanoserver:ltsc2022 --build-arg OSVERSION=ltsc2022 --iidfile /logs/driver-windows-amd64-20348.iid -t localhost/imgcheck-build/driver:windows-amd64-20348 -f buildah/driver/Containerfile.windows /src/driver",
            ),
        ];
        assert_eq!(got.len(), want.len());
        for (g, w) in got.iter().zip(want) {
            assert_eq!((g.0.as_str(), g.1.as_str(), g.2.as_str()), w);
        }
        assert_eq!(
            jobs[3].log,
            Path::new("/logs/driver-windows-amd64-20348.log")
        );
        assert_eq!(
            list_reference(&settings, "driver"),
            "reg.example:5000/csi/driver:v1"
        );
        assert!(unset_contexts(&plan, &images, &env).is_empty());

        let no_env = |_: &str| None;
        let jobs = plan_jobs(&plan, &images, &settings, &no_env).unwrap();
        assert_eq!(jobs[0].spec.context, "${SRC}");
        assert_eq!(
            unset_contexts(&plan, &images, &no_env),
            [("driver".to_string(), vec!["SRC".to_string()])]
        );
    }

    #[test]
    fn a_hostprocess_image_is_one_job_per_architecture_from_the_hostprocess_base() {
        let settings = JobSettings {
            push: "reg.example:5000/csi/".into(),
            tag: "v1".into(),
            log_dir: "/logs".into(),
            timestamp: None,
        };
        let env = |k: &str| (k == "SRC").then(|| "/src/driver".to_string());
        let hpc = PLAN.replace(
            "      builds:\n        - build: 17763\n        - build: 20348\n",
            "      hostprocess: true\n",
        );
        let plan = BuildPlan::parse(&hpc, Path::new("buildah/images.yaml")).unwrap();
        let images = plan.select(&[]).unwrap();
        let jobs = plan_jobs(&plan, &images, &settings, &env).unwrap();
        let last = jobs.last().unwrap();
        assert_eq!(jobs.len(), 3);
        assert_eq!(last.target.label(), "windows/amd64 hostprocess");
        assert_eq!(
            last.push_to,
            "reg.example:5000/csi/driver:v1-windows-amd64-hostprocess"
        );
        assert_eq!(
            shell_line(&build_command(&last.spec, &Passthrough::default())),
            "buildah build --platform=windows/amd64 --build-arg BUILDER=golang:1.24 \
             --build-arg TARGETOS=windows --build-arg TARGETARCH=amd64 \
             --build-arg WINDOWS_BASE=mcr.microsoft.com/oss/kubernetes/windows-host-process-containers-base-image:v1.0.0 \
             --iidfile /logs/driver-windows-amd64-hostprocess.iid \
             -t localhost/imgcheck-build/driver:windows-amd64-hostprocess \
             -f buildah/driver/Containerfile.windows /src/driver"
        );
    }
}
