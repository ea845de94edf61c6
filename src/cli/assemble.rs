//! `imgcheck assemble`: build a manifest list from per-platform images, push it, verify it.
//! The work is in `imgcheck::push`; this reads the arguments, prints and picks the exit kind.

use clap::ValueEnum;
use imgcheck::assemble::{ChildSpec, IndexFormat, parse_annotations, target_ref};
use imgcheck::engine::Verdict;
use imgcheck::exit::ExitKind;
use imgcheck::policy::{DEFAULT_POLICY, Policy};
use imgcheck::push::{self, Outcome, Request};
use imgcheck::reference::ImageRef;
use imgcheck::report;
use imgcheck::session::Session;

use super::error::AfterPush;
use super::{CliError, GlobalArgs, output};

/// Arguments of `imgcheck assemble`.
#[derive(clap::Args)]
pub struct AssembleArgs {
    /// Where to push the list: REGISTRY/REPO:TAG (a tag, not a digest).
    #[arg(long, value_name = "REGISTRY/REPO:TAG")]
    target: String,
    /// Per-platform images (registry references, oci:DIR[:TAG], or indexes whose runnable
    /// entries are taken). Append =os.version=10.0.BUILD.REV to a Windows image whose config
    /// lacks os.version.
    #[arg(required = true, value_name = "CHILD_REF")]
    children: Vec<String>,
    /// List format; default: docker when every child is a Docker schema2 manifest, else oci.
    #[arg(long, value_enum)]
    format: Option<ListFormat>,
    /// Index annotation (repeatable; OCI format only).
    #[arg(long = "annotation", value_name = "KEY=VALUE")]
    annotations: Vec<String>,
    /// Print the list and the digest it would have; push nothing.
    #[arg(long)]
    dry_run: bool,
    /// Policy the pushed list is verified against.
    #[arg(long, default_value = DEFAULT_POLICY)]
    policy: String,
}

/// The kind of list to write (`--format`).
#[derive(Clone, Copy, ValueEnum)]
pub enum ListFormat {
    /// OCI image index (`application/vnd.oci.image.index.v1+json`); entries may be OCI or
    /// Docker schema2 manifests (the OCI spec lets an index reference other media types).
    Oci,
    /// Docker manifest list; every entry must be a Docker schema2 manifest.
    Docker,
}

impl From<ListFormat> for IndexFormat {
    fn from(f: ListFormat) -> IndexFormat {
        match f {
            ListFormat::Oci => IndexFormat::Oci,
            ListFormat::Docker => IndexFormat::Docker,
        }
    }
}

/// Assembles the list; unless `--dry-run`, pushes it and verifies what was pushed.
pub async fn run(global: &GlobalArgs, args: &AssembleArgs) -> Result<ExitKind, CliError> {
    let target = target_ref(&args.target)?;
    let children = args
        .children
        .iter()
        .map(|c| ChildSpec::parse(c))
        .collect::<Result<Vec<_>, _>>()?;
    let annotations = parse_annotations(&args.annotations)?;
    let policy = Policy::load(&args.policy)?;
    let refs: Vec<ImageRef> = std::iter::once(ImageRef::Registry(target.clone()))
        .chain(children.iter().map(|c| c.reference.clone()))
        .collect();
    let session = global.session(&refs, 16).await?;
    let request = Request {
        target,
        children,
        format: args.format.map(IndexFormat::from),
        annotations,
        dry_run: args.dry_run,
    };
    let outcome = push::assemble(&session, &request).await?;
    if args.dry_run {
        return dry_run(&request, &outcome);
    }
    output::eprintln(format_args!("imgcheck: {}", outcome.copied.summary()));
    output::println(format_args!("{}@{}", request.target, outcome.index.digest))?;
    verify(&session, &request, &outcome, &policy).await
}

/// Prints the list that would be pushed (stdout) and what it is (stderr).
fn dry_run(request: &Request, outcome: &Outcome) -> Result<ExitKind, CliError> {
    let index = &outcome.index;
    output::print(&index.bytes)?;
    output::eprintln(format_args!(
        "imgcheck: dry run: {}@{} ({} entries, {}); nothing was pushed",
        request.target,
        index.digest,
        index.entries.len(),
        index.format.media_type()
    ));
    Ok(ExitKind::Pass)
}

/// Reads the pushed list back, prints its report, and fails unless it passes.
async fn verify(
    session: &Session,
    request: &Request,
    outcome: &Outcome,
    policy: &Policy,
) -> Result<ExitKind, CliError> {
    let (target, digest) = (&request.target, &outcome.index.digest);
    let pushed = format!("{target}@{digest}");
    let report = push::verify_pushed(session, target, digest, policy)
        .await
        .map_err(|failure| AfterPush {
            pushed: pushed.clone(),
            failure,
        })?;
    output::print(report::text(std::slice::from_ref(&report)))?;
    match report.verdict {
        Verdict::Pass => Ok(ExitKind::Pass),
        Verdict::Fail => Err(CliError::PushedFails {
            pushed,
            policy: policy.name.clone(),
        }),
        Verdict::Error => Err(CliError::PushedUnverified { pushed }),
    }
}
