//! `imgcheck verify`: judge references against a policy (the run is the library's
//! [`imgcheck::run`]; this turns the flags into its inputs and prints what it returns).

use imgcheck::cluster::nodes::OddNodes;
use imgcheck::cluster::upgrade::UpgradeTo;
use imgcheck::platform::RuntimeProfile;
use imgcheck::policy::DEFAULT_POLICY;
use imgcheck::run::{Finished, Inputs};

use super::args::{GlobalArgs, RefInput, ReportFormat, RuntimeParser};
use super::error::CliError;
use super::exit::ExitKind;
use super::output;
use super::printer::Printer;
use super::progress::Terminal;
use super::signature_policy::SignaturePolicyArgs;

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
    /// Also read the layers: each Windows layer's layout, and the program each entry starts
    /// (Linux entries too, unless the policy says `deep: {linux: false}`).
    #[arg(long)]
    deep: bool,
    /// Also check, in the registry, that the index and every entry a host pulls carry a
    /// cosign signature and an in-toto attestation (the `sha256-<hex>.sig`/`.att` tags and
    /// OCI referrers); also the policy's `signatures.required`.
    #[arg(long)]
    signatures: bool,
    /// A public key (PEM: ECDSA P-256, RSA or Ed25519, as cosign writes `cosign.pub`) that
    /// must verify each signature and attestation (repeatable: one of them must); implies
    /// `--signatures`.
    #[arg(long = "key", value_name = "PUB.pem")]
    keys: Vec<std::path::PathBuf>,
    #[command(flatten)]
    signature_policy: SignaturePolicyArgs,
    /// Judge for the nodes of a cluster instead of the policy's hosts: the output of
    /// `oc get nodes -o json` or `kubectl get nodes -o json` (or `-o yaml`; `-` for standard
    /// input).
    #[arg(long, value_name = "FILE")]
    nodes: Option<String>,
    /// Refuse the node list when a node's runtime or Windows build cannot be read (by
    /// default such a node is skipped, with a note naming it and the field).
    #[arg(long = "strict-nodes", requires = "nodes")]
    strict_nodes: bool,
    /// Runtime profiles to judge with (repeatable); default: the policy's `runtimes` (with
    /// `--nodes`: each node's own).
    #[arg(
        long = "runtime",
        value_name = "PROFILE",
        value_parser = RuntimeParser,
        conflicts_with = "nodes"
    )]
    runtimes: Vec<RuntimeProfile>,
    /// Also judge the nodes of --nodes as the upgrade leaves them: each Windows node under the
    /// containerd its new WMCO installs (its build unchanged), next to the nodes as they are
    /// (WMCO upgrades them one at a time); the version upgraded to is --from-release's.
    #[arg(long, requires = "nodes")]
    upgrade: bool,
    /// --upgrade to this version: OpenShift (4.19, 4.19.3), WMCO (10.19.1), or the runtime
    /// itself (containerd://2.1.4, or a profile such as containerd-2.2).
    #[arg(long = "upgrade-to", value_name = "VERSION", requires = "nodes")]
    upgrade_to: Option<String>,
    /// Registry requests (and images) in flight at once.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u16).range(1..=256))]
    jobs: u16,
}

/// Verifies every reference, printing each image's report as its turn comes, then the end
/// of the report, and exits with the verdicts' kind. Bad input ends the run (exit 2): what
/// was printed stays, a JSON document begun is closed ([`Printer::stop`]).
pub async fn run(global: &GlobalArgs, args: &VerifyArgs) -> Result<ExitKind, CliError> {
    let jobs = usize::from(args.jobs);
    let inputs = Inputs {
        nodes: args.nodes.clone(),
        odd_nodes: OddNodes::strict(args.strict_nodes),
        policy: args.policy.clone(),
        runtimes: args.runtimes.clone(),
        deep: args.deep,
        signatures: args.signatures,
        keys: args.keys.clone(),
        signature_policy: args.signature_policy.files(),
        jobs,
        max_input_bytes: global.max_input_size,
        upgrade: match (&args.upgrade_to, args.upgrade) {
            (Some(v), _) => Some(UpgradeTo::Version(v.clone())),
            (None, true) => Some(UpgradeTo::Release),
            (None, false) => None,
        },
        ..args.input.inputs()
    };
    let terminal = Terminal::default();
    let plan = inputs.plan_within(global.deadline(), &terminal)?;
    let notes: Vec<String> = plan.notes.iter().map(ToString::to_string).collect();
    let mut printer = Printer::new(args.format.into(), &terminal);
    let connection = global.connection(jobs)?;
    let finished = plan.verify_into(connection, &terminal, &mut printer).await;
    terminal.finish();
    let finished = match finished {
        Ok(f) => f,
        Err(e) => return Err(printer.stop(&notes, e)),
    };
    printer.finish(&finished.extras(), std::time::SystemTime::now())?;
    let Finished {
        images,
        verdict,
        stats,
        release_stats,
        ..
    } = finished;
    if args.stats {
        let line = stats.unwrap_or_else(|| "requests: none (no registry references)".to_string());
        output::eprintln(format_args!("imgcheck: {images} images; {line}"));
        if let Some(line) = release_stats {
            output::eprintln(format_args!("imgcheck: reading the release: {line}"));
        }
    }
    Ok(verdict.into())
}
