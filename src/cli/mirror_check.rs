//! `imgcheck mirror-check`: do disconnected mirrors hold each image exactly as its source?

use std::path::PathBuf;

use imgcheck::graph::WalkOptions;
use imgcheck::mirror::{self, check::MirrorRun};
use imgcheck::policy::DEFAULT_POLICY;
use imgcheck::reference::ImageRef;
use imgcheck::report;
use imgcheck::run::{Inputs, Progress as _};

use super::args::{GlobalArgs, RefInput, ReportFormat};
use super::error::CliError;
use super::exit::ExitKind;
use super::output;
use super::progress::Terminal;

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
    let jobs = usize::from(args.jobs);
    let inputs = Inputs {
        nodes: args.nodes.clone(),
        policy: args.policy.clone(),
        jobs,
        max_input_bytes: global.max_input_size,
        ..args.input.inputs()
    };
    let terminal = Terminal::default();
    let plan = inputs.plan(&terminal)?;
    let mut gathered = plan.gather(global.connection(jobs)?).await?;
    let configured =
        !args.idms.is_empty() || !args.icsp.is_empty() || !args.registries_conf.is_empty();
    if !configured && !args.pre {
        return Err(CliError::NoMirrorConfig);
    }
    let config = mirror::load(&args.registries_conf, &args.idms, &args.icsp)?;
    let targets = mirror::check::targets(&config, configured, &gathered.targets)?;
    // Mirrors join the references the session expects (token scopes are batched over them).
    let mut all_refs = gathered.references();
    for t in &targets {
        all_refs.extend(t.resolution.iter().flat_map(|res| {
            res.mirrors
                .iter()
                .map(|m| ImageRef::Registry(m.repository.clone()))
        }));
    }
    let run = MirrorRun {
        policy: gathered.settings.policy.clone(),
        configured,
        pre: args.pre,
        walk: WalkOptions {
            jobs,
            deep: false,
            deep_linux: false,
        },
        images_in_flight: jobs,
    };
    let session = gathered.session(&all_refs);
    terminal.start(targets.len());
    let outcomes = mirror::check::check_all(session, &targets, &run, &|o| terminal.done(o)).await;
    terminal.finish();
    let reports = gathered.finish(outcomes)?.reports;
    let now = std::time::SystemTime::now();
    output::print(report::render(args.format.into(), &reports, now))?;
    Ok(report::overall(&reports).into())
}
