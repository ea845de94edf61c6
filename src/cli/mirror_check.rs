//! `imgcheck mirror-check`: do disconnected mirrors hold each image exactly as its source?

use std::path::PathBuf;

use imgcheck::cluster::nodes::OddNodes;
use imgcheck::graph::WalkOptions;
use imgcheck::mirror::hosts::{dir, wmco};
use imgcheck::mirror::pull::{NodeOs, NodePlan, oses_in_scope};
use imgcheck::mirror::{self, check::MirrorRun, check::Mirrors};
use imgcheck::policy::DEFAULT_POLICY;
use imgcheck::reference::ImageRef;
use imgcheck::report;
use imgcheck::run::{Finished, Gathered, Inputs, Outcome, Progress as _, RunError};

use super::args::{GlobalArgs, RefInput, ReportFormat};
use super::error::CliError;
use super::exit::ExitKind;
use super::output;
use super::printer::Printer;
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
    /// containerd's config_path tree (DIR/<host>/hosts.toml, DIR/_default/hosts.toml): how
    /// Windows nodes find their mirrors, instead of WMCO's rendering of --idms.
    #[arg(long = "hosts-dir", value_name = "DIR")]
    hosts_dir: Option<PathBuf>,
    /// The node OSes to check for (repeatable); default: the OSes of --nodes, else Linux and,
    /// when the policy has Windows hosts, Windows.
    #[arg(long = "os", value_enum, value_name = "OS")]
    os: Vec<OsArg>,
    /// Print, for each reference and node OS, the ordered manifest requests a node makes (no
    /// network at all).
    #[arg(long, conflicts_with_all = ["pre", "from_release"])]
    plan: bool,
    /// Before mirroring: judge the sources against the policy and check the mirror
    /// configuration covers them (without a configuration: a plain verify).
    #[arg(long)]
    pre: bool,
    /// Embedded policy name or policy file (the supported Windows builds).
    #[arg(long, default_value = DEFAULT_POLICY)]
    policy: String,
    /// Judge for the nodes of a cluster instead of the policy's hosts: the output of
    /// `oc get nodes -o json` or `kubectl get nodes -o json` (or `-o yaml`; `-` for standard
    /// input).
    #[arg(long, value_name = "FILE")]
    nodes: Option<String>,
    /// Refuse the node list when a node's runtime or Windows build cannot be read (by
    /// default such a node is skipped, with a note naming it and the field).
    #[arg(long = "strict-nodes", requires = "nodes")]
    strict_nodes: bool,
    /// Output format.
    #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
    format: ReportFormat,
    /// Registry requests (and images) in flight at once.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u16).range(1..=256))]
    jobs: u16,
}

/// A node OS on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum OsArg {
    /// Linux nodes (CRI-O, registries.conf).
    Linux,
    /// Windows nodes (containerd 1.7, hosts.toml).
    Windows,
}

impl From<OsArg> for NodeOs {
    fn from(os: OsArg) -> NodeOs {
        match os {
            OsArg::Linux => NodeOs::Linux,
            OsArg::Windows => NodeOs::Windows,
        }
    }
}

/// Checks every reference against its mirrors (or, with `--pre`, its source; with `--plan`,
/// prints the pull plans only), prints the report, and exits with the verdicts' kind.
pub async fn run(global: &GlobalArgs, args: &MirrorCheckArgs) -> Result<ExitKind, CliError> {
    // Refused before any input is read, as clap refuses a bad combination of flags.
    if args.plan && args.format == ReportFormat::Konflux {
        return Err(CliError::KonfluxPlan);
    }
    let jobs = usize::from(args.jobs);
    let inputs = Inputs {
        nodes: args.nodes.clone(),
        odd_nodes: OddNodes::strict(args.strict_nodes),
        policy: args.policy.clone(),
        jobs,
        max_input_bytes: global.max_input_size,
        ..args.input.inputs()
    };
    let terminal = Terminal::default();
    let plan = inputs.plan_within(global.deadline(), &terminal)?;
    let configured = !args.idms.is_empty()
        || !args.icsp.is_empty()
        || !args.registries_conf.is_empty()
        || args.hosts_dir.is_some();
    if !configured && !args.pre {
        return Err(CliError::NoMirrorConfig);
    }
    let config = mirror::load(&args.registries_conf, &args.idms, &args.icsp)?;
    let windows = match &args.hosts_dir {
        Some(d) => dir::read(d)?,
        None => wmco::render(config.mirror_sets())?,
    };
    let asked: Vec<NodeOs> = args.os.iter().map(|o| NodeOs::from(*o)).collect();
    let oses = oses_in_scope(&asked, &plan.settings.policy);
    let mirrors = configured.then_some(Mirrors {
        config: &config,
        windows: &windows,
        oses: &oses,
    });
    if args.plan {
        let json = args.format == ReportFormat::Json;
        return print_plans(mirrors, &plan.local_references(), json);
    }
    let gathered = plan.gather(global.connection(jobs)?).await?;
    let targets = mirror::check::targets(mirrors, &gathered.targets)?;
    // Mirrors join the references the session expects (token scopes are batched over them).
    let mut all_refs = gathered.references();
    for p in targets.iter().filter_map(|t| t.plan.as_ref()) {
        let places = p.plan.mirrors.iter().chain(&p.elsewhere);
        all_refs.extend(places.map(|m| ImageRef::Registry(m.repository.clone())));
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
    let notes: Vec<String> = gathered.notes.iter().map(ToString::to_string).collect();
    let mut printer = Printer::new(args.format.into(), &terminal);
    let checks = Checks {
        refs: &all_refs,
        targets: &targets,
        run: &run,
    };
    let finished = checks.run(gathered, &terminal, &mut printer).await;
    terminal.finish();
    let finished = match finished {
        Ok(f) => f,
        Err(e) => return Err(printer.stop(&notes, e)),
    };
    printer.finish(&finished.extras(), std::time::SystemTime::now())?;
    Ok(finished.verdict.into())
}

/// The mirror gate's checks of a run's images.
struct Checks<'a> {
    /// Every reference the checks read: the images' and their mirrors'.
    refs: &'a [ImageRef],
    /// One target per image and node OS.
    targets: &'a [mirror::check::Target],
    run: &'a MirrorRun,
}

impl Checks<'_> {
    /// Checks every target through the run's session, telling `terminal` as each is done,
    /// each report to `printer` as its turn comes.
    async fn run(
        &self,
        mut gathered: Gathered,
        terminal: &Terminal,
        printer: &mut Printer<'_>,
    ) -> Result<Finished, RunError> {
        let mut delivery = gathered.delivery(printer);
        let session = gathered.session(self.refs);
        terminal.start(self.targets.len());
        let done = |o: &Outcome| terminal.done(o);
        let mut each = |o| delivery.outcome(o);
        mirror::check::check_all(session, self.targets, self.run, &done, &mut each).await?;
        gathered.finish(delivery)
    }
}

/// `--plan`: the pull plans of `references` (registry references only), printed as text or
/// (`json`) JSON; no network. There is no Konflux plan: [`CliError::KonfluxPlan`].
fn print_plans(
    mirrors: Option<Mirrors<'_>>,
    references: &[ImageRef],
    json: bool,
) -> Result<ExitKind, CliError> {
    let Some(m) = mirrors else {
        return Err(CliError::NoMirrorConfig);
    };
    let mut plans: Vec<NodePlan> = Vec::new();
    for r in references {
        let ImageRef::Registry(reg) = r else {
            return Err(mirror::check::TargetError::Layout(r.clone()).into());
        };
        for os in m.oses {
            plans.push(
                m.node_plan(reg, *os)
                    .map_err(mirror::check::TargetError::from)?,
            );
        }
    }
    output::print(match json {
        true => report::plans_json(&plans),
        false => report::plans_text(&plans),
    })?;
    Ok(ExitKind::Pass)
}
