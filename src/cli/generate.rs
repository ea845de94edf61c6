//! `imgcheck completion SHELL` and `imgcheck man`: shell completions, manual pages and the
//! Markdown command reference (docs/commands.md) made from the command definitions at run
//! time (clap_complete, clap_mangen, [`markdown`]), so they always match the binary
//! (docs/decisions.md, "Completions, man pages and the command reference from the binary").

use std::path::PathBuf;

use crate::cli::exit::ExitKind;
use clap_complete::Shell;

use super::{CliError, markdown, output};

/// Arguments of `imgcheck completion`.
#[derive(clap::Args)]
pub struct CompletionArgs {
    /// The shell: bash, zsh, fish, elvish or powershell.
    #[arg(value_enum)]
    shell: Shell,
}

/// Arguments of `imgcheck man`.
#[derive(clap::Args)]
pub struct ManArgs {
    /// Write imgcheck.1 and one imgcheck-COMMAND.1 page per command into DIR, instead of
    /// printing imgcheck(1) on standard output.
    #[arg(long, value_name = "DIR", conflicts_with = "markdown")]
    dir: Option<PathBuf>,
    /// Print the command reference as Markdown instead (docs/commands.md is this output).
    #[arg(long)]
    markdown: bool,
}

/// Prints the completion script of `command` (the whole command line) for the shell.
pub fn completion(args: &CompletionArgs, mut command: clap::Command) -> Result<ExitKind, CliError> {
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut command, "imgcheck", &mut script);
    output::print(script)?;
    Ok(ExitKind::Pass)
}

/// Prints imgcheck(1), writes every page into `--dir`, or prints the Markdown reference, from
/// `command` (the whole command line).
pub fn man(args: &ManArgs, command: clap::Command) -> Result<ExitKind, CliError> {
    if args.markdown {
        output::print(markdown::reference(command).into_bytes())?;
        return Ok(ExitKind::Pass);
    }
    match &args.dir {
        Some(dir) => {
            clap_mangen::generate_to(command, dir).map_err(|source| CliError::ManDir {
                dir: dir.clone(),
                source,
            })?;
        }
        None => {
            let mut page = Vec::new();
            clap_mangen::Man::new(command)
                .render(&mut page)
                .map_err(CliError::Stdout)?;
            output::print(page)?;
        }
    }
    Ok(ExitKind::Pass)
}
