//! `imgcheck resolve`: the digest a node of a platform would pull.

use imgcheck::engine::{Resolution, resolve};
use imgcheck::exit::ExitKind;
use imgcheck::graph::{Content, Graph, WalkOptions};
use imgcheck::platform::{Platform, RuntimeProfile};
use imgcheck::report;

use super::{CliError, GlobalArgs, SimpleFormat, output};

/// Arguments of `imgcheck resolve`.
#[derive(clap::Args)]
pub struct ResolveArgs {
    /// The reference.
    #[arg(value_name = "REF")]
    reference: String,
    /// The node: os/arch[/variant][:osversion], e.g. windows/amd64:10.0.17763.
    #[arg(long)]
    platform: String,
    /// containerd generation to emulate.
    #[arg(long, default_value = "containerd-2.3")]
    runtime: RuntimeProfile,
    /// Output format.
    #[arg(long, value_enum, default_value_t = SimpleFormat::Text)]
    format: SimpleFormat,
}

/// Resolves the reference for the host: prints the digest (or the JSON document); a host
/// that selects nothing, or an entry it cannot pull, fails.
pub async fn run(global: &GlobalArgs, args: &ResolveArgs) -> Result<ExitKind, CliError> {
    let refs = super::parse_refs(std::slice::from_ref(&args.reference))?;
    let host = Platform::parse(&args.platform)?;
    let session = global.session(&refs, 16).await?;
    let graph = session.graph(&refs[0], WalkOptions::default()).await?;
    let r = resolve(&graph, &host, args.runtime);
    if args.format == SimpleFormat::Json {
        output::println(report::resolve_json(
            &graph.reference,
            &host,
            args.runtime,
            &r,
        ))?;
    }
    let digest = selected(&graph, &host, &r)?;
    if args.format == SimpleFormat::Text {
        output::println(digest)?;
    }
    Ok(ExitKind::Pass)
}

/// The digest the host pulls, or why it pulls nothing usable.
fn selected<'a>(graph: &Graph, host: &Platform, r: &'a Resolution) -> Result<&'a str, CliError> {
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
