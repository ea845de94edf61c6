//! `imgcheck assemble`: build a manifest list from per-platform images, push it by digest,
//! verify it by digest, and only then move the tag.
//! The work is in `imgcheck::assemble`; this reads the arguments, prints and picks the exit kind.

use crate::cli::exit::ExitKind;
use clap::ValueEnum;
use imgcheck::assemble::{
    ChildSpec, IndexFormat, PushOutcome, Request, Tag, parse_annotations, push_list, target_ref,
};
use imgcheck::engine::Verdict;
use imgcheck::escape::escape;
use imgcheck::policy::{DEFAULT_POLICY, Policy};
use imgcheck::reference::ImageRef;
use imgcheck::report;

use super::args::ReportFormat;
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
    format: Option<ListKind>,
    /// Index annotation (repeatable; OCI format only).
    #[arg(long = "annotation", value_name = "KEY=VALUE")]
    annotations: Vec<String>,
    /// Print the list and the digest it would have, and judge it against the policy as the
    /// real run would before moving the tag (the report on standard error, exit 1 when it
    /// fails); push nothing.
    #[arg(long)]
    dry_run: bool,
    /// Policy the pushed list is verified against (by digest) before the tag moves to it.
    #[arg(long, default_value = DEFAULT_POLICY)]
    policy: String,
    /// Move the tag to the new list even when it fails the policy or cannot be fully
    /// verified (said on standard error; the exit code is still the verdict's).
    #[arg(long)]
    force: bool,
    /// Print request counters (reads and writes) to standard error at the end.
    #[arg(long)]
    stats: bool,
    /// Format of the pushed list's report (`--format` is the list's); with any but text, the
    /// pushed reference goes to standard error, so standard output is the report alone.
    #[arg(long = "report", value_enum, default_value_t = ReportFormat::Text, value_name = "FORMAT")]
    report: ReportFormat,
}

/// The kind of list to write (`--format`).
#[derive(Clone, Copy, ValueEnum)]
pub enum ListKind {
    /// OCI image index (`application/vnd.oci.image.index.v1+json`); entries may be OCI or
    /// Docker schema2 manifests (the OCI spec lets an index reference other media types).
    Oci,
    /// Docker manifest list; every entry must be a Docker schema2 manifest.
    Docker,
}

impl From<ListKind> for IndexFormat {
    fn from(f: ListKind) -> IndexFormat {
        match f {
            ListKind::Oci => IndexFormat::Oci,
            ListKind::Docker => IndexFormat::Docker,
        }
    }
}

/// Assembles the list; with `--dry-run`, judges it and pushes nothing; otherwise pushes it by
/// digest, verifies it, and moves the tag when it passes (or with `--force`).
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
    let session = global.session(&refs, 16)?;
    let request = Request {
        target,
        children,
        format: args.format.map(IndexFormat::from),
        annotations,
        dry_run: args.dry_run,
        policy,
        force: args.force,
    };
    let result = push_list(&session, &request).await;
    if args.stats {
        let line = session.stats().map_or_else(
            || "requests: none (no registry references)".to_string(),
            |s| s.summary(),
        );
        super::output::eprintln(format_args!("imgcheck: {line}"));
    }
    let outcome = result?;
    if args.dry_run {
        return dry_run(&request, &outcome);
    }
    output::eprintln(format_args!("imgcheck: {}", outcome.copied.summary()));
    let pushed = format!("{}@{}", request.target, outcome.index.digest);
    match args.report {
        ReportFormat::Text => output::println(escape(&pushed))?,
        _ => output::eprintln(format_args!("imgcheck: pushed {}", escape(&pushed))),
    }
    verdict(&request, &outcome, args.report)
}

/// Prints the list that would be pushed (stdout), its report and what it is (stderr); the
/// exit is the verdict the real run would give before moving the tag.
fn dry_run(request: &Request, outcome: &PushOutcome) -> Result<ExitKind, CliError> {
    let index = &outcome.index;
    output::print(&index.bytes)?;
    let verdict = match &outcome.report {
        Some(report) => {
            output::eprint_lines(report::text(std::slice::from_ref(report)).trim_end());
            report.verdict
        }
        None => Verdict::Error,
    };
    output::eprintln(format_args!(
        "imgcheck: dry run: {}@{} ({} entries, {}) {} policy '{}'; nothing was pushed",
        request.target,
        index.digest,
        index.entries.len(),
        index.format.media_type(),
        match verdict {
            Verdict::Pass => "passes",
            Verdict::Fail => "fails",
            Verdict::Error => "could not be fully judged against",
        },
        request.policy.name
    ));
    Ok(ExitKind::from(verdict))
}

/// Prints the report of the list (read back by digest) in `format`, says what became of the
/// tag, and fails unless the list passes.
fn verdict(
    request: &Request,
    outcome: &PushOutcome,
    format: ReportFormat,
) -> Result<ExitKind, CliError> {
    let pushed = format!("{}@{}", request.target, outcome.index.digest);
    let Some(report) = &outcome.report else {
        return Err(CliError::PushedUnverified {
            pushed,
            tag: outcome.tag,
        });
    };
    output::print(report::render(
        format.into(),
        std::slice::from_ref(report),
        &imgcheck::engine::RunExtras::default(),
        std::time::SystemTime::now(),
    ))?;
    if outcome.tag == Tag::Forced {
        output::eprintln(format_args!(
            "imgcheck: --force: {} now names {}, which did not pass policy '{}'",
            request.target, outcome.index.digest, request.policy.name
        ));
    }
    match report.verdict {
        Verdict::Pass => Ok(ExitKind::Pass),
        Verdict::Fail => Err(CliError::PushedFails {
            pushed,
            policy: request.policy.name.clone(),
            tag: outcome.tag,
        }),
        Verdict::Error => Err(CliError::PushedUnverified {
            pushed,
            tag: outcome.tag,
        }),
    }
}
