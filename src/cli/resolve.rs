//! `imgcheck resolve`: the digest a node of a platform would pull, or what each node of a
//! cluster would pull (`--nodes`).

use imgcheck::cluster::nodes;
use imgcheck::engine::{HostResolution, resolve};
use imgcheck::escape::escape;
use imgcheck::graph::{Content, Graph, WalkOptions};
use imgcheck::input::InputError;
use imgcheck::platform::{Platform, RuntimeProfile};
use imgcheck::policy::Host;
use imgcheck::report;

use super::args::{GlobalArgs, RuntimeParser, SimpleFormat, parse_refs};
use super::error::CliError;
use super::exit::ExitKind;
use super::output;

/// Arguments of `imgcheck resolve`.
#[derive(clap::Args)]
pub struct ResolveArgs {
    /// The reference.
    #[arg(value_name = "REF")]
    reference: String,
    /// The node: os/arch[/variant][:osversion], e.g. windows/amd64:10.0.17763.
    #[arg(long, required_unless_present = "nodes", conflicts_with = "nodes")]
    platform: Option<String>,
    /// Resolve for every host row of a cluster's nodes instead: the output of
    /// `oc get nodes -o json` or `kubectl get nodes -o json` (or `-o yaml`; `-` for standard
    /// input).
    #[arg(long, value_name = "FILE")]
    nodes: Option<String>,
    /// Refuse the node list when a node's runtime or Windows build cannot be read (by
    /// default such a node is skipped, with a note naming it and the field).
    #[arg(long = "strict-nodes", requires = "nodes")]
    strict_nodes: bool,
    /// Runtime profile to emulate, a row of the profile table: a containerd generation,
    /// Docker Engine's Windows pull or CRI-O's (with --nodes: each node's own runtime).
    #[arg(
        long,
        value_name = "PROFILE",
        value_parser = RuntimeParser,
        default_value_t = RuntimeProfile::DEFAULT,
        conflicts_with = "nodes"
    )]
    runtime: RuntimeProfile,
    /// Output format.
    #[arg(long, value_enum, default_value_t = SimpleFormat::Text)]
    format: SimpleFormat,
}

/// Resolves the reference for the host: prints the digest (or the JSON document); a host
/// that selects nothing, or an entry it cannot pull, fails. With `--nodes`, one line (or
/// document) per host row; any row that fails fails the command.
pub async fn run(global: &GlobalArgs, args: &ResolveArgs) -> Result<ExitKind, CliError> {
    let refs = parse_refs(std::slice::from_ref(&args.reference))?;
    // clap requires --platform without --nodes; an empty one is refused as a platform.
    let target = match &args.nodes {
        Some(path) => Err(node_hosts(path, global.max_input_size, args.strict_nodes)?),
        None => Ok(Platform::parse(args.platform.as_deref().unwrap_or(""))?),
    };
    if let Ok(host) = &target
        && host.is_windows()
        && !args.runtime.runs_windows()
    {
        return Err(CliError::BadInput(InputError::new(
            format!("--runtime {}", args.runtime),
            format!("Windows nodes do not run it; give a containerd profile for {host}"),
        )));
    }
    if let Ok(host) = &target
        && !host.is_windows()
        && args.runtime.is_docker()
    {
        return Err(CliError::BadInput(InputError::new(
            format!("--runtime {}", args.runtime),
            format!(
                "it follows Docker Engine's Windows pull only (moby's Linux pull is not \
                 modelled); give a containerd profile or cri-o for {host}"
            ),
        )));
    }
    let session = global.session(&refs, 16)?;
    let graph = session.graph(&refs[0], WalkOptions::default()).await?;
    match target {
        Ok(host) => one(&graph, &host, args),
        Err(hosts) => each(&graph, hosts, args),
    }
}

/// The host rows of the node list at `path` (`-`: standard input); notes about runtime
/// versions no profile covers, and about the nodes skipped, go to standard error.
fn node_hosts(path: &str, max_bytes: u64, strict: bool) -> Result<Vec<Host>, CliError> {
    let read = nodes::read_nodes(path, max_bytes, nodes::OddNodes::strict(strict))?;
    for note in &read.notes {
        output::eprintln(format_args!("imgcheck: note: {}", escape(note)));
    }
    Ok(read.hosts)
}

/// `resolve --nodes`: one line (or document) per host row; a row that pulls nothing usable
/// is told on standard error and fails the command.
fn each(graph: &Graph, hosts: Vec<Host>, args: &ResolveArgs) -> Result<ExitKind, CliError> {
    let rows: Vec<_> = hosts
        .into_iter()
        .map(|h| {
            let r = resolve(graph, &h.platform, h.runtime.unwrap_or(args.runtime));
            (h, r)
        })
        .collect();
    if args.format == SimpleFormat::Json {
        output::println(report::resolve_rows_json(
            &graph.reference,
            &rows,
            args.runtime,
        ))?;
    }
    let mut kind = ExitKind::Pass;
    for (h, r) in &rows {
        let runtime = h.runtime.unwrap_or(args.runtime);
        let digest = match selected(graph, &h.platform, r) {
            Ok(d) => d.to_string(),
            Err(e) => {
                kind = ExitKind::Fail;
                output::eprintln(format_args!(
                    "imgcheck: {} under {runtime}: {e}",
                    h.subject()
                ));
                "(none)".to_string()
            }
        };
        if args.format == SimpleFormat::Text {
            let nodes: Vec<_> = h.nodes.iter().map(|n| escape(n)).collect();
            output::println(format!(
                "{}\t{}\t{runtime}\t{}",
                escape(&digest),
                escape(&h.label()),
                nodes.join(",")
            ))?;
        }
    }
    Ok(kind)
}

/// `resolve --platform`: the digest (or the document) for one host.
fn one(graph: &Graph, host: &Platform, args: &ResolveArgs) -> Result<ExitKind, CliError> {
    let r = resolve(graph, host, args.runtime);
    if args.format == SimpleFormat::Json {
        output::println(report::resolve_json(
            &graph.reference,
            host,
            args.runtime,
            &r,
        ))?;
    }
    let digest = selected(graph, host, &r)?;
    if args.format == SimpleFormat::Text {
        output::println(escape(digest))?;
    }
    Ok(ExitKind::Pass)
}

/// The digest the host pulls, or why it pulls nothing usable.
fn selected<'a>(
    graph: &Graph,
    host: &Platform,
    r: &'a HostResolution,
) -> Result<&'a str, CliError> {
    match (&r.digest, &r.child_problem) {
        (None, _) => {
            let why = match &graph.root.content {
                Content::Problem(p) => format!(" ({p})"),
                Content::Schema1 => " (schema1 manifest)".to_string(),
                _ => String::new(),
            };
            let version = host.os_version.clone().unwrap_or_default();
            let host = format!("{} {version}", host.os_arch())
                .trim_end()
                .to_string();
            Err(CliError::NoMatch { host, why })
        }
        (Some(d), Some(p)) => Err(CliError::PullWouldFail {
            host: host.to_string(),
            digest: d.clone(),
            problem: p.clone(),
        }),
        (Some(d), None) => Ok(d),
    }
}
