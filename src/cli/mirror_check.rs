//! `imgcheck mirror-check`: do disconnected mirrors hold each image exactly as its source?

use std::path::PathBuf;

use imgcheck::cluster::nodes::OddNodes;
use imgcheck::mirror::pull::NodeOs;
use imgcheck::policy::DEFAULT_POLICY;
use imgcheck::report;
use imgcheck::run::{GateInputs, Inputs, MirrorFiles};

use super::args::{GlobalArgs, RefInput, ReportFormat};
use super::error::CliError;
use super::exit::ExitKind;
use super::output;
use super::printer::Printer;
use super::progress::Terminal;
use super::signature_policy::SignaturePolicyArgs;

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
    /// configuration (and, with --from-imageset, the ImageSet) covers them, the Windows pause
    /// image included (without either: a plain verify).
    #[arg(long)]
    pre: bool,
    /// imgcheck runs where the sources cannot be reached (inside the disconnected network):
    /// the mirrors of a digest-pinned reference are checked against its digest without asking
    /// its source. (A pull no mirror serves is never asked of its source: the configuration
    /// alone fails it.)
    #[arg(long, conflicts_with = "pre")]
    disconnected: bool,
    /// Signatures are required (also the policy's `signatures.required`): a cosign signature
    /// the source holds for the index or an entry Linux nodes pull that is not in the mirror
    /// they pull from fails the check (a warning otherwise); with --disconnected, the mirror
    /// must hold a signature of each.
    #[arg(long, conflicts_with_all = ["pre", "plan"])]
    signatures: bool,
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
    #[command(flatten)]
    signature_policy: SignaturePolicyArgs,
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
    if args.plan {
        match args.format {
            ReportFormat::Konflux => {
                return Err(CliError::VerdictOfPlan(
                    "konflux",
                    "Konflux TEST_OUTPUT result",
                ));
            }
            ReportFormat::Junit => {
                return Err(CliError::VerdictOfPlan("junit", "JUnit test result"));
            }
            ReportFormat::Text | ReportFormat::Json => {}
        }
    }
    let configured = args.idms.len() + args.icsp.len() + args.registries_conf.len() > 0
        || args.hosts_dir.is_some();
    if configured && args.signature_policy.given() {
        match (args.pre, args.plan) {
            (true, _) => return Err(CliError::SignaturePolicyUnread("--pre")),
            (_, true) => return Err(CliError::SignaturePolicyUnread("--plan")),
            _ => {}
        }
    }
    let jobs = usize::from(args.jobs);
    let gate = GateInputs {
        inputs: Inputs {
            nodes: args.nodes.clone(),
            odd_nodes: OddNodes::strict(args.strict_nodes),
            policy: args.policy.clone(),
            jobs,
            max_input_bytes: global.max_input_size,
            signatures: args.signatures,
            signature_policy: args.signature_policy.files(),
            ..args.input.inputs()
        },
        mirrors: MirrorFiles {
            idms: args.idms.clone(),
            icsp: args.icsp.clone(),
            registries_conf: args.registries_conf.clone(),
            hosts_dir: args.hosts_dir.clone(),
        },
        oses: args.os.iter().map(|o| NodeOs::from(*o)).collect(),
        pre: args.pre,
        disconnected: args.disconnected,
    };
    let terminal = Terminal::default();
    let plan = gate.plan_within(global.deadline(), &terminal)?;
    if args.plan {
        let plans = plan.plans()?;
        output::print(match args.format == ReportFormat::Json {
            true => report::plans_json(&plans),
            false => report::plans_text(&plans),
        })?;
        return Ok(ExitKind::Pass);
    }
    let notes = plan.notes();
    let mut printer = Printer::new(args.format.into(), &terminal);
    let finished = plan
        .check_into(global.connection(jobs)?, &terminal, &mut printer)
        .await;
    terminal.finish();
    let finished = match finished {
        Ok(f) => f,
        Err(e) => return Err(printer.stop(&notes, e)),
    };
    printer.finish(&finished.extras(), std::time::SystemTime::now())?;
    Ok(finished.verdict.into())
}
