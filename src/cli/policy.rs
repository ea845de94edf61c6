//! `imgcheck policy`: policy commands.

use crate::cli::exit::ExitKind;
use clap::Subcommand;
use imgcheck::policy::{DEFAULT_POLICY, Policy};

use super::CliError;

/// The `policy` subcommands.
#[derive(Subcommand)]
pub enum PolicyCommand {
    /// Print the effective policy (an embedded name or a file).
    Show {
        /// Embedded policy name or file.
        #[arg(default_value = DEFAULT_POLICY)]
        policy: String,
    },
}

/// Runs a `policy` subcommand.
pub fn run(command: &PolicyCommand) -> Result<ExitKind, CliError> {
    match command {
        PolicyCommand::Show { policy } => {
            super::output::print(Policy::load(policy)?.to_yaml())?;
            Ok(ExitKind::Pass)
        }
    }
}
