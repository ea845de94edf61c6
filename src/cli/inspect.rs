//! `imgcheck inspect`: a reference's entries, list platform next to config platform.

use imgcheck::engine::inspect;
use imgcheck::graph::WalkOptions;
use imgcheck::report;

use super::args::{GlobalArgs, SimpleFormat, parse_refs};
use super::error::CliError;
use super::exit::ExitKind;
use super::output;

/// Arguments of `imgcheck inspect`.
#[derive(clap::Args)]
pub struct InspectArgs {
    /// The reference.
    #[arg(value_name = "REF")]
    reference: String,
    /// Output format.
    #[arg(long, value_enum, default_value_t = SimpleFormat::Text)]
    format: SimpleFormat,
}

/// Reads the reference and prints its entries.
pub async fn run(global: &GlobalArgs, args: &InspectArgs) -> Result<ExitKind, CliError> {
    let refs = parse_refs(std::slice::from_ref(&args.reference))?;
    let session = global.session(&refs, 16)?;
    let graph = session.graph(&refs[0], WalkOptions::default()).await?;
    let view = inspect(&graph);
    match args.format {
        SimpleFormat::Json => output::println(report::inspect_json(&view))?,
        SimpleFormat::Text => output::print(report::inspect_text(&view))?,
    }
    Ok(ExitKind::Pass)
}
