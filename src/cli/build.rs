//! `imgcheck build`: arguments → [`imgcheck::builder`] → [`imgcheck::report::build`] → exit kind.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::cli::exit::ExitKind;
use imgcheck::auth::{AuthError, AuthStore};
use imgcheck::builder::BuildError;
use imgcheck::builder::assembler::PushAssembler;
use imgcheck::builder::buildah::Passthrough;
use imgcheck::builder::check::{CheckFinding, check};
use imgcheck::builder::compose::{StageMode, preview};
use imgcheck::builder::jobs::{Job, JobSettings, image_lists, plan_jobs, require_contexts};
use imgcheck::builder::outcome::overall;
use imgcheck::builder::plan::{BuildPlan, DEFAULT_PLAN};
use imgcheck::builder::run::{Build, RunSettings, buildah_version, default_log_dir};
use imgcheck::reference::ImageRef;
use imgcheck::report;
use imgcheck::session::Session;
use imgcheck::source::registry::ClientOptions;

use super::build_progress::BuildProgress;
use super::{CliError, GlobalArgs};

/// Arguments of `imgcheck build`.
#[derive(clap::Args)]
pub struct BuildArgs {
    /// The build plan.
    #[arg(long, default_value = DEFAULT_PLAN, value_name = "FILE")]
    plan: PathBuf,
    /// Build only these images of the plan (repeatable); default: all.
    #[arg(long = "image", value_name = "NAME")]
    images: Vec<String>,
    /// Where to push: REGISTRY/NAMESPACE; images go to REGISTRY/NAMESPACE/<image>.
    #[arg(
        long,
        value_name = "REGISTRY/NAMESPACE",
        required_unless_present = "check"
    )]
    push: Option<String>,
    /// Tag of each manifest list; per-platform images get TAG-<os>-<arch>[-<build>].
    #[arg(long, default_value = "latest")]
    tag: String,
    /// Builds at once.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u16).range(1..=64))]
    jobs: u16,
    /// Lint the plan and its Containerfiles; build nothing.
    #[arg(long)]
    check: bool,
    /// Print the exact buildah command lines; build nothing.
    #[arg(long)]
    dry_run: bool,
    /// Directory for per-build logs (default: a new directory under the temp dir).
    #[arg(long, value_name = "DIR")]
    log_dir: Option<PathBuf>,
    /// buildah --storage-driver (e.g. vfs).
    #[arg(long, value_name = "DRIVER")]
    storage_driver: Option<String>,
    /// buildah build --isolation (oci, chroot, rootless).
    #[arg(long, value_name = "TYPE")]
    isolation: Option<String>,
    /// Every time in the images is this (seconds since the epoch): Buildah's --timestamp, and
    /// the times of the Windows layers imgcheck writes. Two builds of the same inputs then give
    /// the same digests.
    #[arg(long, env = "SOURCE_DATE_EPOCH", value_name = "SECONDS")]
    timestamp: Option<u64>,
    /// How each Windows stage is made: compose it without Buildah when it is only FROM the base
    /// plus COPY/ADD/ENV/USER/ENTRYPOINT/CMD/LABEL/WORKDIR (auto), always with Buildah, or
    /// always composed (a stage that cannot be is an error).
    #[arg(long, value_enum, default_value_t = WindowsStage::Auto, value_name = "HOW")]
    windows_stage: WindowsStage,
    /// No longer needed, and ignored: with a Buildah older than 1.44 imgcheck writes the
    /// Windows layers itself.
    #[arg(long, hide = true)]
    allow_legacy_windows_layers: bool,
}

/// `--windows-stage`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum WindowsStage {
    /// Compose when the stage can be, else Buildah.
    Auto,
    /// Always Buildah.
    Buildah,
    /// Always compose.
    Compose,
}

impl From<WindowsStage> for StageMode {
    fn from(w: WindowsStage) -> StageMode {
        match w {
            WindowsStage::Auto => StageMode::Auto,
            WindowsStage::Buildah => StageMode::Buildah,
            WindowsStage::Compose => StageMode::Compose,
        }
    }
}

/// What `--allow-legacy-windows-layers` now says.
const LEGACY_FLAG_NOTE: &str = "imgcheck: note: --allow-legacy-windows-layers is ignored: with a \
     Buildah older than 1.44 imgcheck writes the Windows layers itself";

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// Runs `imgcheck build` with the global options: `--authfile` is handed to Buildah too.
pub async fn run(global: &GlobalArgs, args: &BuildArgs) -> Result<ExitKind, CliError> {
    let options = global.client_options(ClientOptions::default().max_requests)?;
    let auth = || global.auth_store();
    let authfile = global.authfile.as_deref();
    let (report, kind) = build(args, global.max_input_size, authfile, auth, options).await?;
    super::output::print(report)?;
    Ok(kind)
}

/// The build: `auth` loads imgcheck's own credentials (global `--authfile`, `--creds`,
/// `--no-creds`) once the plan is known to be usable; `options` says how to reach registries;
/// the plan file is read up to `max_input` bytes (`--max-input-size`).
/// Returns what to print on standard output, and the exit kind.
async fn build(
    args: &BuildArgs,
    max_input: u64,
    authfile: Option<&Path>,
    auth: impl FnOnce() -> Result<AuthStore, AuthError>,
    options: ClientOptions,
) -> Result<(String, ExitKind), BuildError> {
    let plan = BuildPlan::load(&args.plan, max_input)?;
    let images = plan.select(&args.images)?;
    let findings = check(&plan, &images, &env);
    if args.check {
        return Ok(check_only(&plan, images.len(), &findings));
    }
    refuse_errors(&findings)?;
    if args.allow_legacy_windows_layers {
        super::output::eprintln(LEGACY_FLAG_NOTE);
    }
    let settings = JobSettings {
        push: args.push.clone().unwrap_or_default(),
        tag: args.tag.clone(),
        log_dir: args.log_dir.clone().unwrap_or_else(default_log_dir),
        timestamp: args.timestamp,
    };
    let jobs = plan_jobs(&plan, &images, &settings, &env)?;
    let lists = image_lists(&plan, &images, &settings)?;
    let passthrough = passthrough(args, authfile, &options);
    if args.dry_run {
        let jobs = preview_stages(jobs, args.windows_stage.into())?;
        let text = report::build::dry_run(&findings, &lists, &jobs, &passthrough);
        return Ok((text, ExitKind::Pass));
    }
    require_contexts(&plan, &images, &env)?;
    let auth = auth()?;
    let version = buildah_version().await?;
    let run_settings = RunSettings {
        jobs: usize::from(args.jobs),
        passthrough,
        timestamp: args.timestamp,
        windows_stage: args.windows_stage.into(),
    };
    let build = Build {
        jobs,
        images: lists,
        settings: &run_settings,
        reporter: Arc::new(BuildProgress::for_terminal()),
    };
    let session_for = |refs: Vec<ImageRef>| async move {
        let session = Session::new(&options, auth);
        session.expect(&refs);
        session
    };
    let results = build.run(version, session_for, &PushAssembler).await?;
    Ok((report::build::results(&results), overall(&results).into()))
}

/// `--dry-run`: how each Windows stage would be made (composed, or built by Buildah and why),
/// the jobs changed as the build would change them; nothing is written. The bases are not
/// read: one in a registry is taken to be usable.
fn preview_stages(mut jobs: Vec<Job>, mode: StageMode) -> Result<Vec<Job>, BuildError> {
    for job in &mut jobs {
        let in_registry = job
            .target
            .base
            .as_deref()
            .and_then(|b| b.parse::<ImageRef>().ok())
            .is_some_and(|r| matches!(r, ImageRef::Registry(_)));
        preview(job, mode, in_registry)?;
    }
    Ok(jobs)
}

/// `--check`: the findings for standard output; any error is a usage error.
fn check_only(plan: &BuildPlan, images: usize, findings: &[CheckFinding]) -> (String, ExitKind) {
    let text = report::build::check(&plan.path, images, findings);
    if report::build::errors(findings).next().is_none() {
        (text, ExitKind::Pass)
    } else {
        (text, ExitKind::Usage)
    }
}

/// The options every `buildah` command gets.
fn passthrough(args: &BuildArgs, authfile: Option<&Path>, options: &ClientOptions) -> Passthrough {
    Passthrough {
        storage_driver: args.storage_driver.clone(),
        isolation: args.isolation.clone(),
        tls_verify: (!options.tls_verify).then_some(false),
        authfile: authfile.map(PathBuf::from),
    }
}

/// A plan with errors is not built: the errors go to standard error.
fn refuse_errors(findings: &[CheckFinding]) -> Result<(), BuildError> {
    let errors = report::build::errors(findings).count();
    if errors == 0 {
        return Ok(());
    }
    for f in report::build::errors(findings) {
        super::output::eprintln(f);
    }
    Err(BuildError::Check { errors })
}
