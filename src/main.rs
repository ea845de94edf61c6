//! The `imgcheck` command line: parses the arguments and hands each command to its module in
//! [`cli`]; the work is in the `imgcheck` library.

use std::process::ExitCode;

use clap::{CommandFactory, Parser};

mod cli;

use cli::exit::ExitKind;
use cli::{Cli, CliError, Command};

/// Runs the command.
async fn run(cli: Cli) -> Result<ExitKind, CliError> {
    let global = &cli.global;
    match &cli.command {
        Command::Verify(args) => cli::verify::run(global, args).await,
        Command::Resolve(args) => cli::resolve::run(global, args).await,
        Command::Inspect(args) => cli::inspect::run(global, args).await,
        Command::Assemble(args) => cli::assemble::run(global, args).await,
        Command::MirrorCheck(args) => cli::mirror_check::run(global, args).await,
        Command::Build(args) => cli::build::run(global, args).await,
        Command::Policy { command } => cli::policy::run(command),
        Command::Completion(args) => cli::generate::completion(args, Cli::command()),
        Command::Man(args) => cli::generate::man(args, Cli::command()),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    cli::verbose::install(cli.global.verbose);
    // One thread: imgcheck waits on the network; a second worker only added cross-thread
    // wake-ups (measured in scripts/bench, docs/decisions.md). CPU-heavy work (layer
    // decompression) goes to the blocking pool.
    let ended = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(CliError::Runtime)
        .and_then(|runtime| runtime.block_on(run(cli)));
    let kind = ended.unwrap_or_else(|e| {
        cli::output::print_error(&e);
        ExitKind::of_error(&e)
    });
    ExitCode::from(kind.code())
}
