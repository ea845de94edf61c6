//! `imgcheck mirror-check`: do disconnected mirrors hold each image exactly as its source?

use std::path::PathBuf;

use crate::cli::exit::ExitKind;
use imgcheck::graph::WalkOptions;
use imgcheck::mirror::{self, check::MirrorRun};
use imgcheck::policy::DEFAULT_POLICY;
use imgcheck::reference::ImageRef;
use imgcheck::report;

use super::progress::Progress;
use super::{CliError, GlobalArgs, RefInput, ReportFormat};

/// Arguments of `imgcheck mirror-check`.
#[derive(clap::Args)]
pub struct MirrorCheckArgs {
    #[command(flatten)]
    input: RefInput,
    /// ImageDigestMirrorSet / ImageTagMirrorSet YAML (several documents; repeatable).
    #[arg(long = "idms", value_name = "FILE")]
    idms: Vec<PathBuf>,
    /// ImageContentSourcePolicy YAML (several documents; repeatable).
    #[arg(long = "icsp", value_name = "FILE")]
    icsp: Vec<PathBuf>,
    /// registries.conf v2, with its FILE.d/*.conf drop-ins (repeatable).
    #[arg(long = "registries-conf", value_name = "FILE")]
    registries_conf: Vec<PathBuf>,
    /// Before mirroring: judge the sources against the policy and check the mirror
    /// configuration covers them (without a configuration: a plain verify).
    #[arg(long)]
    pre: bool,
    /// Embedded policy name or policy file (the supported Windows builds).
    #[arg(long, default_value = DEFAULT_POLICY)]
    policy: String,
    /// Judge for the nodes of a cluster instead of the policy's hosts: the output of
    /// `oc get nodes -o json` or `kubectl get nodes -o json` (`-` for standard input).
    #[arg(long, value_name = "FILE")]
    nodes: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
    format: ReportFormat,
    /// Registry requests (and images) in flight at once.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u16).range(1..=256))]
    jobs: u16,
}

/// Checks every reference against its mirrors (or, with `--pre`, its source), prints the
/// report, and exits with the verdicts' kind.
pub async fn run(global: &GlobalArgs, args: &MirrorCheckArgs) -> Result<ExitKind, CliError> {
    args.input.one_stdin(args.nodes.as_deref())?;
    let policy = super::load_policy(&args.policy, args.nodes.as_deref())?;
    let jobs = usize::from(args.jobs);
    let mut gathered = args.input.gather(global, &policy, jobs).await?;
    let refs = gathered.references();
    let configured =
        !args.idms.is_empty() || !args.icsp.is_empty() || !args.registries_conf.is_empty();
    if !configured && !args.pre {
        return Err(CliError::NoMirrorConfig);
    }
    let config = mirror::load(&args.registries_conf, &args.idms, &args.icsp)?;
    let targets = mirror::check::targets(&config, configured, &gathered.targets)?;
    // Mirrors join the references the session expects (token scopes are batched over them).
    let mut all_refs = refs.clone();
    for t in &targets {
        all_refs.extend(t.resolution.iter().flat_map(|res| {
            res.mirrors
                .iter()
                .map(|m| ImageRef::Registry(m.repository.clone()))
        }));
    }
    let session = gathered.session(global, &all_refs, jobs)?;
    let run = MirrorRun {
        policy,
        configured,
        pre: args.pre,
        walk: WalkOptions { jobs, deep: false },
        images_in_flight: jobs,
    };
    let progress = Progress::new(targets.len() as u64);
    let outcomes = mirror::check::check_all(&session, &targets, &run, &|o| progress.done(o)).await;
    progress.finish();
    let mut reports = super::reports(outcomes)?;
    reports.extend(gathered.missing);
    let now = std::time::SystemTime::now();
    super::output::print(report::render(args.format.into(), &reports, now))?;
    Ok(report::overall(&reports).into())
}
