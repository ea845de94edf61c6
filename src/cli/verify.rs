//! `imgcheck verify`: judge references against a policy.

use crate::cli::exit::ExitKind;
use imgcheck::batch::{self, VerifyRun};
use imgcheck::graph::WalkOptions;
use imgcheck::platform::RuntimeProfile;
use imgcheck::policy::DEFAULT_POLICY;
use imgcheck::report;

use super::output;
use super::progress::Progress;
use super::{CliError, GlobalArgs, RefInput, ReportFormat};

/// Arguments of `imgcheck verify`.
#[derive(clap::Args)]
pub struct VerifyArgs {
    #[command(flatten)]
    input: RefInput,
    /// Print request counters to standard error at the end.
    #[arg(long)]
    stats: bool,
    /// Embedded policy name or policy file.
    #[arg(long, default_value = DEFAULT_POLICY)]
    policy: String,
    /// Output format.
    #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
    format: ReportFormat,
    /// Also read Windows layers and check they use the Windows layer layout.
    #[arg(long)]
    deep: bool,
    /// Judge for the nodes of a cluster instead of the policy's hosts: the output of
    /// `oc get nodes -o json` or `kubectl get nodes -o json` (`-` for standard input).
    #[arg(long, value_name = "FILE")]
    nodes: Option<String>,
    /// Runtime profiles to judge with (repeatable); default: the policy's `runtimes` (with
    /// `--nodes`: each node's own).
    #[arg(long = "runtime", value_name = "PROFILE", conflicts_with = "nodes")]
    runtimes: Vec<RuntimeProfile>,
    /// Registry requests (and images) in flight at once.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u16).range(1..=256))]
    jobs: u16,
}

/// Verifies every reference, prints the report, and exits with the verdicts' kind.
pub async fn run(global: &GlobalArgs, args: &VerifyArgs) -> Result<ExitKind, CliError> {
    args.input.one_stdin(args.nodes.as_deref())?;
    let policy = super::load_policy(&args.policy, args.nodes.as_deref())?;
    let runtimes = if args.runtimes.is_empty() {
        policy.runtimes.clone()
    } else {
        args.runtimes.clone()
    };
    let jobs = usize::from(args.jobs);
    let mut gathered = args.input.gather(global, &policy, jobs).await?;
    let refs = gathered.references();
    let session = gathered.session(global, &refs, jobs)?;
    let run = VerifyRun {
        policy,
        runtimes,
        walk: WalkOptions {
            jobs,
            deep: args.deep,
        },
        images_in_flight: jobs,
    };
    let progress = Progress::new(refs.len() as u64);
    let outcomes =
        batch::verify_all(&session, &gathered.targets, &run, &|o| progress.done(o)).await;
    progress.finish();
    let mut reports = super::reports(outcomes)?;
    reports.extend(gathered.missing.iter().cloned());
    let now = std::time::SystemTime::now();
    output::print(report::render(args.format.into(), &reports, now))?;
    if args.stats {
        let line = gathered.run_stats(&session).map_or_else(
            || "requests: none (no registry references)".to_string(),
            |s| s.summary(),
        );
        output::eprintln(format_args!("imgcheck: {} images; {line}", reports.len()));
        if let Some(line) = gathered.release_stats() {
            output::eprintln(format_args!("imgcheck: reading the release: {line}"));
        }
    }
    Ok(report::overall(&reports).into())
}
