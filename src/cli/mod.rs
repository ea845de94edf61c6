//! The `imgcheck` command line: the command tree ([`Cli`], [`Command`]) here, the arguments
//! several commands share in [`args`], one module per command (with its own arguments), the
//! progress display, the output and the command line's error. Each command turns its
//! arguments into the library's inputs, calls the library, hands the result to
//! `imgcheck::report` and returns an [`exit::ExitKind`]. This file imports only the commands'
//! arguments; no command imports from it.

use clap::{Parser, Subcommand};

pub mod args;
pub mod assemble;
pub mod build;
pub mod build_progress;
pub mod error;
pub mod exit;
pub mod generate;
pub mod inspect;
pub mod markdown;
pub mod mirror_check;
pub mod output;
pub mod policy;
pub mod printer;
pub mod progress;
pub mod resolve;
pub mod signature_policy;
pub mod verbose;
pub mod verify;

pub use args::GlobalArgs;
pub use error::CliError;

/// The command line.
#[derive(Parser)]
#[command(
    name = "imgcheck",
    version,
    about = "Keeps multi-arch container releases honest for Windows nodes",
    after_help = "Exit codes: 0 pass, 1 an image fails its policy, 2 usage or bad input, 3 a check could not be completed."
)]
pub struct Cli {
    /// Options of every command.
    #[command(flatten)]
    pub global: GlobalArgs,
    /// The command.
    #[command(subcommand)]
    pub command: Command,
}

/// The commands.
#[derive(Subcommand)]
pub enum Command {
    /// Verify references against a policy: which entry each supported host would pull.
    Verify(verify::VerifyArgs),
    /// Print the digest a node of PLATFORM would pull from REF.
    Resolve(resolve::ResolveArgs),
    /// Show a reference's entries: list platform next to config platform.
    Inspect(inspect::InspectArgs),
    /// Build a manifest list from per-platform images (platforms from their configs), push it
    /// by digest, then verify it.
    Assemble(assemble::AssembleArgs),
    /// Check that disconnected mirrors hold each image exactly as its source does.
    #[command(name = "mirror-check")]
    MirrorCheck(mirror_check::MirrorCheckArgs),
    /// Build the images of a plan with Buildah, assemble and push their lists, verify them.
    Build(build::BuildArgs),
    /// Policy commands.
    Policy {
        /// The policy command.
        #[command(subcommand)]
        command: policy::PolicyCommand,
    },
    /// Print a shell completion script, e.g. `source <(imgcheck completion bash)`.
    #[command(visible_alias = "completions")]
    Completion(generate::CompletionArgs),
    /// Print the imgcheck(1) manual page (`imgcheck man | man -l -`), write every page with
    /// --dir, or print the command reference as Markdown with --markdown.
    Man(generate::ManArgs),
}
