//! `imgcheck build`: arguments and wiring over [`imgcheck::build`].

use std::path::PathBuf;

use imgcheck::auth::AuthStore;
use imgcheck::build::assembler::PushAssembler;
use imgcheck::build::buildah::{Passthrough, build_command, push_command, shell_line};
use imgcheck::build::check::{Level, check, image_policy};
use imgcheck::build::jobs::{JobSettings, list_reference, plan_jobs, unset_contexts};
use imgcheck::build::plan::{DEFAULT_PLAN, Plan};
use imgcheck::build::run::{
    Build, ImageOutcome, RunError, RunSettings, buildah_version, default_log_dir, exit_code, table,
};
use imgcheck::engine::{ImageReport, Verdict};
use imgcheck::reference::ImageRef;
use imgcheck::report::{EXIT_ERROR, EXIT_PASS, EXIT_USAGE};
use imgcheck::session::Session;
use imgcheck::source::registry::ClientOptions;

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
    /// Build Windows targets even with a Buildah older than 1.44, whose layers will not run on
    /// Windows (labs only); the lists are then verified with --deep.
    #[arg(long)]
    allow_legacy_windows_layers: bool,
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// Runs `imgcheck build`; `Err((code, message))` ends the command with that code.
/// `authfile` is handed to Buildah; `auth` loads imgcheck's own credentials (global
/// `--authfile`, `--creds`, `--no-creds`) once the plan is known to be usable; `options` says
/// how to reach registries (global flags).
pub async fn run(
    args: &BuildArgs,
    authfile: Option<&std::path::Path>,
    auth: impl FnOnce() -> Result<AuthStore, String>,
    options: ClientOptions,
) -> Result<i32, (i32, String)> {
    let usage = |m: String| (EXIT_USAGE, m);
    let plan = Plan::load(&args.plan).map_err(|e| usage(e.to_string()))?;
    let images = plan
        .select(&args.images)
        .map_err(|e| usage(e.to_string()))?;

    let findings = check(&plan, &images, &env);
    let errors = findings.iter().filter(|f| f.level == Level::Error).count();
    if args.check {
        for f in &findings {
            println!("{f}");
        }
        println!(
            "{}: {} image(s) checked, {errors} error(s), {} note(s)",
            plan.path.display(),
            images.len(),
            findings.len() - errors
        );
        return Ok(if errors > 0 { EXIT_USAGE } else { EXIT_PASS });
    }
    if errors > 0 {
        for f in findings.iter().filter(|f| f.level == Level::Error) {
            eprintln!("{f}");
        }
        return Err(usage(format!(
            "the plan has {errors} error(s); see `imgcheck build --check`"
        )));
    }

    let push = args.push.clone().unwrap_or_default();
    let settings = JobSettings {
        push: push.trim_end_matches('/').to_string(),
        tag: args.tag.clone(),
        log_dir: args.log_dir.clone().unwrap_or_else(default_log_dir),
    };
    let jobs = plan_jobs(&plan, &images, &settings, &env).map_err(usage)?;
    let passthrough = Passthrough {
        storage_driver: args.storage_driver.clone(),
        isolation: args.isolation.clone(),
        tls_verify: (!options.tls_verify).then_some(false),
        authfile: authfile.map(PathBuf::from),
    };
    let mut lists = Vec::new();
    for image in &images {
        let list = list_reference(&settings, image.name.as_str());
        let reference = match list.parse::<ImageRef>() {
            Ok(ImageRef::Registry(r)) if r.digest.is_none() => r,
            Ok(_) => return Err(usage(format!("--push {push}: expected REGISTRY/NAMESPACE"))),
            Err(e) => return Err(usage(format!("--push {push} / --tag {}: {e}", args.tag))),
        };
        let policy = image_policy(&plan, image).map_err(usage)?;
        lists.push((image.name.to_string(), reference, policy));
    }

    if args.dry_run {
        for f in findings.iter().filter(|f| f.level == Level::Note) {
            println!("# {f}");
        }
        for (name, list, policy) in &lists {
            println!("# {name} → {list} (policy {})", policy.name);
            for job in jobs.iter().filter(|j| &j.image == name) {
                println!("{}", shell_line(&build_command(&job.spec, &passthrough)));
                let id = format!("$(cat {})", job.spec.iidfile.display());
                println!(
                    "{}",
                    shell_line(&push_command(
                        "IMAGE_ID",
                        &job.push_to,
                        &job.digestfile,
                        &passthrough
                    ))
                    .replace("IMAGE_ID", &format!("\"{id}\""))
                );
            }
            println!(
                "# then: assemble {list} from the pushed digests, push it, verify it with policy {}{}",
                policy.name,
                if args.allow_legacy_windows_layers {
                    " (--deep)"
                } else {
                    ""
                }
            );
        }
        println!(
            "# Windows bases without os.version get --os-version=10.0.<build> (checked when building)"
        );
        return Ok(EXIT_PASS);
    }

    let unset = unset_contexts(&plan, &images, &env);
    if !unset.is_empty() {
        let what: Vec<String> = unset
            .iter()
            .map(|(i, vars)| format!("{i} needs {}", vars.join(", ")))
            .collect();
        return Err(usage(format!(
            "set the build context variables first: {}",
            what.join("; ")
        )));
    }
    let auth = auth().map_err(usage)?;
    let version = buildah_version().await.map_err(run_error)?;
    let run_settings = RunSettings {
        jobs: usize::from(args.jobs),
        passthrough,
        allow_legacy_windows_layers: args.allow_legacy_windows_layers,
        progress: RunSettings::progress_default(),
    };
    let build = Build {
        jobs,
        images: lists,
        settings: &run_settings,
    };
    let results = build
        .run(
            version,
            |refs: Vec<ImageRef>| async move { Session::new(&options, auth, &refs).await },
            &PushAssembler,
        )
        .await
        .map_err(run_error)?;
    // The verify matrix and findings of every image that did not pass, then the summary.
    let reports: Vec<ImageReport> = results
        .iter()
        .filter_map(|r| match &r.outcome {
            ImageOutcome::Verified { report, .. } if report.verdict != Verdict::Pass => {
                Some((**report).clone())
            }
            _ => None,
        })
        .collect();
    if !reports.is_empty() {
        println!("{}", imgcheck::report::text(&reports));
    }
    print!("{}", table(&results));
    Ok(exit_code(&results))
}

fn run_error(e: RunError) -> (i32, String) {
    match e {
        RunError::Usage(m) => (EXIT_USAGE, m),
        RunError::Incomplete(m) => (EXIT_ERROR, m),
    }
}
