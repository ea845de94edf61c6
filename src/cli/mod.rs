//! The `imgcheck` command line: the global options, one module per command, the progress
//! display and the command line's error. Each command reads its arguments, calls the library,
//! hands the result to `imgcheck::report` and returns an [`ExitKind`].

use std::path::PathBuf;
use std::time::Duration;

use clap::{ArgAction, Parser, Subcommand, ValueEnum};
use imgcheck::auth::{AuthError, AuthStore};
use imgcheck::batch::{self, Outcome};
use imgcheck::cluster::nodes;
use imgcheck::engine::ImageReport;
use imgcheck::policy::{Host, Policy};
use imgcheck::reference::ImageRef;
use imgcheck::report;
use imgcheck::session::Session;
use imgcheck::source::registry::ClientOptions;

pub mod assemble;
pub mod build;
pub mod build_progress;
pub mod error;
pub mod exit;
pub mod generate;
pub mod inspect;
pub mod mirror_check;
pub mod output;
pub mod policy;
pub mod progress;
pub mod resolve;
pub mod targets;
pub mod verbose;
pub mod verify;

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

/// Options every command takes: how to reach registries and with which credentials.
#[derive(clap::Args)]
pub struct GlobalArgs {
    /// Credentials file (containers-auth.json format); default: REGISTRY_AUTH_FILE, then the
    /// podman and docker locations.
    #[arg(long, global = true, value_name = "FILE")]
    pub authfile: Option<PathBuf>,
    /// Require HTTPS and verify certificates (loopback registries may always use HTTP).
    #[arg(long, global = true, default_value_t = true, action = ArgAction::Set, value_name = "BOOL")]
    tls_verify: bool,
    /// Credentials for every registry of the run, instead of the auth files.
    #[arg(
        long,
        global = true,
        value_name = "USER:PASSWORD",
        conflicts_with = "no_creds"
    )]
    creds: Option<String>,
    /// Access registries anonymously, whatever the auth files say.
    #[arg(long, global = true)]
    no_creds: bool,
    /// TLS files (*.crt CAs, *.cert/*.key client pair) for every registry, instead of
    /// /etc/containers/certs.d/HOST and /etc/docker/certs.d/HOST.
    #[arg(long, global = true, value_name = "DIR")]
    cert_dir: Option<PathBuf>,
    /// Overall deadline for registry work, e.g. 90s or 5m (default: none).
    #[arg(long, global = true, value_name = "DURATION", value_parser = humantime::parse_duration)]
    timeout: Option<Duration>,
    /// Longest wait for a registry's answer, or for the next piece of its body, before the
    /// request counts as stalled and is retried.
    #[arg(long, global = true, value_name = "DURATION", default_value = "30s", value_parser = humantime::parse_duration)]
    request_timeout: Duration,
    /// Retries of a registry request after faults that may heal (5xx, 429, resets, timeouts).
    #[arg(long, global = true, value_name = "N", default_value_t = 4, value_parser = clap::value_parser!(u32).range(0..=10))]
    retries: u32,
    /// Tell every retry and token request on standard error.
    #[arg(short, long, global = true)]
    pub verbose: bool,
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
    /// Print the imgcheck(1) manual page (`imgcheck man | man -l -`), or write every page
    /// with --dir.
    Man(generate::ManArgs),
}

impl GlobalArgs {
    /// The run's credentials: `--no-creds`, `--creds`, else the auth files.
    pub fn auth_store(&self) -> Result<AuthStore, AuthError> {
        if self.no_creds {
            Ok(AuthStore::anonymous())
        } else if let Some(creds) = &self.creds {
            AuthStore::with_creds(creds)
        } else {
            AuthStore::load(self.authfile.as_deref())
        }
    }

    /// How to reach registries, with at most `max_requests` requests in flight.
    pub fn client_options(&self, max_requests: usize) -> Result<ClientOptions, CliError> {
        if let Some(dir) = &self.cert_dir
            && !dir.is_dir()
        {
            return Err(CliError::CertDir(dir.clone()));
        }
        Ok(ClientOptions {
            tls_verify: self.tls_verify,
            max_requests,
            cert_dir: self.cert_dir.clone(),
            request_timeout: self.request_timeout.max(Duration::from_millis(100)),
            deadline: self.timeout,
            retries: self.retries,
            ..ClientOptions::default()
        })
    }

    /// The run's session, told of `refs` (more may follow: [`Session::expect`]): credentials
    /// first, then the client options.
    pub fn session(&self, refs: &[ImageRef], max_requests: usize) -> Result<Session, CliError> {
        let auth = self.auth_store()?;
        let options = self.client_options(max_requests)?;
        let session = Session::new(&options, auth);
        session.expect(refs);
        Ok(session)
    }
}

/// Where the references of a batch command come from.
#[derive(clap::Args)]
pub struct RefInput {
    /// References: REGISTRY/REPO[:TAG][@DIGEST], docker://…, oci:DIR[:TAG], oci:DIR@DIGEST.
    #[arg(value_name = "REF", required_unless_present_any = ["from_file", "from_imageset", "from_manifests", "from_release"])]
    references: Vec<String>,
    /// Read references from FILE, one per line, `#` comments (`-` for standard input).
    #[arg(long, value_name = "FILE")]
    from_file: Option<String>,
    /// Read references from an oc-mirror ImageSetConfiguration (mirror.additionalImages).
    #[arg(long, value_name = "FILE")]
    from_imageset: Option<String>,
    /// Read the images of the pod templates in PATH (a file, `-`, or a directory of *.yaml,
    /// *.yml, *.json): DaemonSets, Deployments, StatefulSets, ReplicaSets, Jobs, CronJobs,
    /// Pods, ReplicationControllers, DeploymentConfigs; each judged for the hosts its pods can
    /// land on.
    #[arg(long, value_name = "PATH")]
    from_manifests: Option<PathBuf>,
    /// Verify the components of an OpenShift release image (e.g.
    /// quay.io/openshift-release-dev/ocp-release:4.18.0-multi): those the policy's
    /// `release.components` names, or those given with --release-image.
    #[arg(long, value_name = "REF")]
    from_release: Option<String>,
    /// A component of the release to verify (a tag of its image-references; repeatable),
    /// instead of the policy's `release.components`.
    #[arg(
        long = "release-image",
        value_name = "NAME",
        requires = "from_release",
        value_parser = clap::builder::NonEmptyStringValueParser::new()
    )]
    release_images: Vec<String>,
}

impl RefInput {
    /// Refuses standard input for more than one of these inputs and `--nodes` (`nodes`).
    pub fn one_stdin(&self, nodes: Option<&str>) -> Result<(), CliError> {
        one_stdin(&[
            ("--from-file", self.from_file.as_deref()),
            ("--from-imageset", self.from_imageset.as_deref()),
            (
                "--from-manifests",
                self.from_manifests.as_deref().and_then(|p| p.to_str()),
            ),
            ("--nodes", nodes),
        ])
    }

    /// References from the command line, `--from-file` and `--from-imageset`.
    pub fn collect(&self) -> Result<Vec<ImageRef>, CliError> {
        let mut refs = parse_refs(&self.references)?;
        if let Some(f) = &self.from_file {
            refs.extend(batch::read_reference_list(f)?);
        }
        if let Some(f) = &self.from_imageset {
            let set = batch::read_imageset(f)?;
            for w in &set.warnings {
                output::eprintln(format_args!("imgcheck: warning: {w}"));
            }
            refs.extend(set.images);
        }
        Ok(refs)
    }
}

/// The policy `name_or_path`, with the hosts of the node list `nodes` (`--nodes`) in place of
/// its own; notes about runtime versions no profile covers go to standard error.
pub fn load_policy(name_or_path: &str, nodes: Option<&str>) -> Result<Policy, CliError> {
    let policy = Policy::load(name_or_path)?;
    Ok(match nodes {
        Some(path) => policy.with_hosts(node_hosts(path)?),
        None => policy,
    })
}

/// The host rows of the node list at `path` (`-`: standard input); notes about runtime
/// versions no profile covers go to standard error.
pub fn node_hosts(path: &str) -> Result<Vec<Host>, CliError> {
    let read = nodes::read_nodes(path)?;
    for note in &read.notes {
        output::eprintln(format_args!("imgcheck: note: {note}"));
    }
    Ok(read.hosts)
}

/// Refuses two inputs read from standard input (`-`) in one run: the first would take it all.
pub fn one_stdin(inputs: &[(&'static str, Option<&str>)]) -> Result<(), CliError> {
    let readers: Vec<&str> = inputs
        .iter()
        .filter(|(_, v)| *v == Some("-"))
        .map(|(flag, _)| *flag)
        .collect();
    match readers.as_slice() {
        [_, _, ..] => Err(CliError::StdinTwice(readers.join(", "))),
        _ => Ok(()),
    }
}

/// Parses references as typed.
pub fn parse_refs(inputs: &[String]) -> Result<Vec<ImageRef>, CliError> {
    Ok(inputs
        .iter()
        .map(|s| s.parse::<ImageRef>())
        .collect::<Result<_, _>>()?)
}

/// The reports of a batch, in input order; the first bad input ends the command instead.
pub fn reports(outcomes: Vec<Outcome>) -> Result<Vec<ImageReport>, CliError> {
    outcomes
        .into_iter()
        .map(|o| match o {
            Outcome::Report(r) => Ok(r),
            Outcome::BadInput(m) => Err(CliError::BadInput(m)),
        })
        .collect()
}

/// Output formats of `verify` and `mirror-check`.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReportFormat {
    /// Human-readable matrix and findings.
    Text,
    /// One JSON document.
    Json,
    /// Konflux TEST_OUTPUT (ADR 0030).
    Konflux,
}

impl From<ReportFormat> for report::Format {
    fn from(f: ReportFormat) -> report::Format {
        match f {
            ReportFormat::Text => report::Format::Text,
            ReportFormat::Json => report::Format::Json,
            ReportFormat::Konflux => report::Format::Konflux,
        }
    }
}

/// Output formats of `resolve` and `inspect`.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SimpleFormat {
    // No doc comments: they would become per-value help in `--help`.
    Text,
    Json,
}
