//! The `imgcheck` command line: a thin layer over the library.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{ArgAction, Parser, Subcommand, ValueEnum};

#[path = "cli/build.rs"]
mod build_cli;
#[path = "cli/build_progress.rs"]
mod build_progress;

use imgcheck::auth::AuthStore;
use imgcheck::batch;
use imgcheck::engine::{ImageReport, resolve};
use imgcheck::exit::Classify;
use imgcheck::graph::{Content, Graph, WalkOptions};
use imgcheck::mirror;
use imgcheck::platform::{Platform, RuntimeProfile};
use imgcheck::policy::{DEFAULT_POLICY, Policy};
use imgcheck::reference::ImageRef;
use imgcheck::report::{self, EXIT_ERROR, EXIT_FAIL, EXIT_PASS, EXIT_USAGE, Format};
use imgcheck::session::Session;
use imgcheck::source::FetchError;
use imgcheck::source::registry::ClientOptions;

mod progress;
mod verbose;

#[derive(Parser)]
#[command(
    name = "imgcheck",
    version,
    about = "Keeps multi-arch container releases honest for Windows nodes",
    after_help = "Exit codes: 0 pass, 1 an image fails its policy, 2 usage or bad input, 3 a check could not be completed."
)]
struct Cli {
    /// Credentials file (containers-auth.json format); default: REGISTRY_AUTH_FILE, then the
    /// podman and docker locations.
    #[arg(long, global = true, value_name = "FILE")]
    authfile: Option<PathBuf>,
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
    timeout: Option<std::time::Duration>,
    /// Longest wait for a registry's answer, or for the next piece of its body, before the
    /// request counts as stalled and is retried.
    #[arg(long, global = true, value_name = "DURATION", default_value = "30s", value_parser = humantime::parse_duration)]
    request_timeout: std::time::Duration,
    /// Retries of a registry request after faults that may heal (5xx, 429, resets, timeouts).
    #[arg(long, global = true, value_name = "N", default_value_t = 4, value_parser = clap::value_parser!(u32).range(0..=10))]
    retries: u32,
    /// Tell every retry and token request on standard error.
    #[arg(short, long, global = true)]
    verbose: bool,
    #[command(subcommand)]
    command: Command,
}

/// Where the references of a batch command come from.
#[derive(clap::Args)]
struct RefInput {
    /// References: REGISTRY/REPO[:TAG][@DIGEST], docker://…, oci:DIR[:TAG], oci:DIR@DIGEST.
    #[arg(value_name = "REF", required_unless_present_any = ["from_file", "from_imageset"])]
    references: Vec<String>,
    /// Read references from FILE, one per line, `#` comments (`-` for standard input).
    #[arg(long, value_name = "FILE")]
    from_file: Option<String>,
    /// Read references from an oc-mirror ImageSetConfiguration (mirror.additionalImages).
    #[arg(long, value_name = "FILE")]
    from_imageset: Option<String>,
}

#[derive(Subcommand)]
enum Command {
    /// Verify references against a policy: which entry each supported host would pull.
    Verify {
        #[command(flatten)]
        input: RefInput,
        /// Print request counters to standard error at the end.
        #[arg(long)]
        stats: bool,
        /// Embedded policy name or policy file.
        #[arg(long, default_value = DEFAULT_POLICY)]
        policy: String,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
        /// Also read Windows layers and check they use the Windows layer layout.
        #[arg(long)]
        deep: bool,
        /// Runtime profiles to judge with (repeatable); default: the policy's `runtimes`.
        #[arg(long = "runtime", value_name = "PROFILE")]
        runtimes: Vec<RuntimeProfile>,
        /// Registry requests (and images) in flight at once.
        #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u16).range(1..=256))]
        jobs: u16,
    },
    /// Print the digest a node of PLATFORM would pull from REF.
    Resolve {
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
    },
    /// Show a reference's entries: list platform next to config platform.
    Inspect {
        /// The reference.
        #[arg(value_name = "REF")]
        reference: String,
        /// Output format.
        #[arg(long, value_enum, default_value_t = SimpleFormat::Text)]
        format: SimpleFormat,
    },
    /// Build a manifest list from per-platform images (platforms from their configs), push it
    /// by digest, then verify it.
    Assemble(AssembleArgs),
    /// Check that disconnected mirrors hold each image exactly as its source does.
    #[command(name = "mirror-check")]
    MirrorCheck {
        #[command(flatten)]
        input: RefInput,
        /// ImageDigestMirrorSet / ImageTagMirrorSet YAML (several documents; repeatable).
        #[arg(long = "idms", value_name = "FILE")]
        idms: Vec<PathBuf>,
        /// ImageContentSourcePolicy YAML (several documents; repeatable).
        #[arg(long = "icsp", value_name = "FILE")]
        icsp: Vec<PathBuf>,
        /// registries.conf v2, with its FILE.d/*.conf drop-ins (repeatable).
        #[arg(long = "registries-conf", value_name = "FILE")]
        registries_conf: Vec<PathBuf>,
        /// Before mirroring: judge the sources against the policy and check the mirror
        /// configuration covers them (without a configuration: a plain verify).
        #[arg(long)]
        pre: bool,
        /// Embedded policy name or policy file (the supported Windows builds).
        #[arg(long, default_value = DEFAULT_POLICY)]
        policy: String,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
        /// Registry requests (and images) in flight at once.
        #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u16).range(1..=256))]
        jobs: u16,
    },
    /// Build the images of a plan with Buildah, assemble and push their lists, verify them.
    Build(build_cli::BuildArgs),
    /// Policy commands.
    Policy {
        #[command(subcommand)]
        command: PolicyCommand,
    },
}

#[derive(Subcommand)]
enum PolicyCommand {
    /// Print the effective policy (an embedded name or a file).
    Show {
        /// Embedded policy name or file.
        #[arg(default_value = DEFAULT_POLICY)]
        policy: String,
    },
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum SimpleFormat {
    Text,
    Json,
}

/// A failure that ends the command with an exit code and a message.
struct Exit(i32, String);

fn usage(msg: impl std::fmt::Display) -> Exit {
    Exit(EXIT_USAGE, msg.to_string())
}

fn parse_refs(inputs: &[String]) -> Result<Vec<ImageRef>, Exit> {
    inputs
        .iter()
        .map(|s| s.parse::<ImageRef>().map_err(usage))
        .collect()
}

/// The run's credentials: `--no-creds`, `--creds`, else the auth files.
fn credentials(cli: &Cli) -> Result<AuthStore, imgcheck::auth::AuthError> {
    if cli.no_creds {
        Ok(AuthStore::anonymous())
    } else if let Some(creds) = &cli.creds {
        AuthStore::with_creds(creds)
    } else {
        AuthStore::load(cli.authfile.as_deref())
    }
}

fn auth_store(cli: &Cli) -> Result<AuthStore, Exit> {
    credentials(cli).map_err(usage)
}

/// An error and its causes, one `caused by:` line each.
fn with_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        out.push_str(&format!("\n  caused by: {c}"));
        cause = c.source();
    }
    out
}

/// How to reach registries, from the global options.
fn client_options(cli: &Cli, max_requests: usize) -> Result<ClientOptions, Exit> {
    if let Some(dir) = &cli.cert_dir
        && !dir.is_dir()
    {
        return Err(usage(format!(
            "--cert-dir {}: not a directory",
            dir.display()
        )));
    }
    Ok(ClientOptions {
        tls_verify: cli.tls_verify,
        max_requests,
        cert_dir: cli.cert_dir.clone(),
        request_timeout: cli
            .request_timeout
            .max(std::time::Duration::from_millis(100)),
        deadline: cli.timeout,
        retries: cli.retries,
        ..ClientOptions::default()
    })
}

/// References from the command line, `--from-file` and `--from-imageset`, at least one.
fn collect_refs(input: &RefInput) -> Result<Vec<ImageRef>, Exit> {
    let mut refs = parse_refs(&input.references)?;
    if let Some(f) = &input.from_file {
        refs.extend(batch::read_reference_list(f).map_err(usage)?);
    }
    if let Some(f) = &input.from_imageset {
        refs.extend(batch::read_imageset(f).map_err(usage)?);
    }
    if refs.is_empty() {
        return Err(usage(
            "no references given (REF..., --from-file or --from-imageset)",
        ));
    }
    Ok(refs)
}

async fn session(cli: &Cli, refs: &[ImageRef], max_requests: usize) -> Result<Session, Exit> {
    let auth = auth_store(cli)?;
    let options = client_options(cli, max_requests)?;
    Ok(Session::new(&options, auth, refs).await)
}

/// Walks one reference; bad input ends the run (exit 2), other fetch failures become the
/// image's `error` verdict.
async fn graph_or_report(
    session: &Session,
    reference: &ImageRef,
    options: WalkOptions,
) -> Result<Result<Graph, ImageReport>, Exit> {
    match session.graph(reference, options).await {
        Ok(g) => Ok(Ok(g)),
        Err(FetchError::BadInput(m)) => Err(usage(m)),
        Err(e) => Ok(Err(ImageReport::unavailable(
            &reference.to_string(),
            &e.to_string(),
        ))),
    }
}

fn print_reports(format: Format, reports: &[ImageReport]) {
    match format {
        Format::Text => print!("{}", report::text(reports)),
        Format::Json => println!("{}", report::json(reports)),
        Format::Konflux => println!(
            "{}",
            serde_json::to_string(&report::konflux(reports, std::time::SystemTime::now()))
                .expect("serialises")
        ),
    }
}

async fn run(cli: Cli) -> Result<i32, Exit> {
    match &cli.command {
        Command::Verify {
            input,
            stats,
            policy,
            format,
            deep,
            runtimes,
            jobs,
        } => {
            let refs = collect_refs(input)?;
            let policy = Policy::load(policy).map_err(usage)?;
            let runtimes = if runtimes.is_empty() {
                policy.runtimes.clone()
            } else {
                runtimes.clone()
            };
            let jobs = usize::from(*jobs);
            let session = session(&cli, &refs, jobs).await?;
            let run = batch::VerifyRun {
                policy,
                runtimes,
                walk: WalkOptions { jobs, deep: *deep },
                images_in_flight: jobs,
            };
            let progress = progress::Progress::new(refs.len() as u64);
            let outcomes = batch::verify_all(&session, &refs, &run, &|o| progress.done(o)).await;
            progress.finish();
            let mut reports = Vec::with_capacity(outcomes.len());
            for o in outcomes {
                match o {
                    batch::Outcome::Report(r) => reports.push(r),
                    batch::Outcome::BadInput(m) => return Err(usage(m)),
                }
            }
            match format {
                Format::Text => print!("{}", report::text(&reports)),
                Format::Json => println!("{}", report::json(&reports)),
                Format::Konflux => println!(
                    "{}",
                    serde_json::to_string(&report::konflux(&reports, std::time::SystemTime::now()))
                        .expect("serialises")
                ),
            }
            if *stats {
                let line = session.stats().map_or_else(
                    || "requests: none (no registry references)".to_string(),
                    |s| s.summary(),
                );
                eprintln!("imgcheck: {} images; {line}", reports.len());
            }
            Ok(report::exit_code(&reports))
        }
        Command::Resolve {
            reference,
            platform,
            runtime,
            format,
        } => {
            let refs = parse_refs(std::slice::from_ref(reference))?;
            let host = Platform::parse(platform).map_err(usage)?;
            let session = session(&cli, &refs, 16).await?;
            let graph = match graph_or_report(&session, &refs[0], WalkOptions::default()).await? {
                Ok(g) => g,
                Err(report) => {
                    return Err(Exit(EXIT_ERROR, report.findings[0].message.clone()));
                }
            };
            let r = resolve(&graph, &host, *runtime);
            if *format == SimpleFormat::Json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&serde_json::json!({
                        "reference": graph.reference,
                        "host": host.to_string(),
                        "runtime": runtime.name(),
                        "digest": r.digest,
                        "platform": r.platform,
                        "config_platform": r.config_platform,
                        "candidates": r.candidates,
                    }))
                    .expect("serialises")
                );
            }
            match (&r.digest, &r.child_problem) {
                (None, _) => {
                    let why = match &graph.root.content {
                        Content::Problem(p) => format!(" ({p})"),
                        Content::Schema1 => " (schema1 manifest)".to_string(),
                        _ => String::new(),
                    };
                    Err(Exit(
                        EXIT_FAIL,
                        format!(
                            "no matching manifest for {} {} in the manifest list entries{why}",
                            host.os_arch(),
                            host.os_version.clone().unwrap_or_default()
                        )
                        .replace("  ", " "),
                    ))
                }
                (Some(d), Some(p)) => Err(Exit(
                    EXIT_FAIL,
                    format!("{} selects {d}, but the pull would fail: {p}", host),
                )),
                (Some(d), None) => {
                    if *format == SimpleFormat::Text {
                        println!("{d}");
                    }
                    Ok(EXIT_PASS)
                }
            }
        }
        Command::Inspect { reference, format } => {
            let refs = parse_refs(std::slice::from_ref(reference))?;
            let session = session(&cli, &refs, 16).await?;
            let graph = match graph_or_report(&session, &refs[0], WalkOptions::default()).await? {
                Ok(g) => g,
                Err(report) => return Err(Exit(EXIT_ERROR, report.findings[0].message.clone())),
            };
            let view = imgcheck::engine::inspect(&graph);
            match format {
                SimpleFormat::Json => {
                    println!(
                        "{}",
                        serde_json::to_string_pretty(&view).expect("serialises")
                    )
                }
                SimpleFormat::Text => print!("{}", inspect_text(&view)),
            }
            Ok(EXIT_PASS)
        }
        Command::Assemble(args) => run_assemble(&cli, args).await,
        Command::MirrorCheck {
            input,
            idms,
            icsp,
            registries_conf,
            pre,
            policy,
            format,
            jobs,
        } => {
            let refs = collect_refs(input)?;
            let policy = Policy::load(policy).map_err(usage)?;
            let configured = !idms.is_empty() || !icsp.is_empty() || !registries_conf.is_empty();
            if !configured && !*pre {
                return Err(usage(
                    "mirror-check needs --idms, --icsp or --registries-conf (or --pre for a plain verify)",
                ));
            }
            let config = mirror::load(registries_conf, idms, icsp).map_err(usage)?;
            let targets = mirror::check::targets(&config, configured, &refs).map_err(usage)?;
            // Mirrors join the session's registries (plain-HTTP probing of loopback hosts).
            let mut all_refs = refs.clone();
            for t in &targets {
                all_refs.extend(t.resolution.iter().flat_map(|res| {
                    res.mirrors
                        .iter()
                        .map(|m| ImageRef::Registry(m.repository.clone()))
                }));
            }
            let jobs = usize::from(*jobs);
            let session = session(&cli, &all_refs, jobs).await?;
            let run = mirror::check::MirrorRun {
                policy,
                configured,
                pre: *pre,
                walk: WalkOptions { jobs, deep: false },
                images_in_flight: jobs,
            };
            let progress = progress::Progress::new(targets.len() as u64);
            let outcomes =
                mirror::check::check_all(&session, &targets, &run, &|o| progress.done(o)).await;
            progress.finish();
            let mut reports = Vec::with_capacity(outcomes.len());
            for o in outcomes {
                match o {
                    batch::Outcome::Report(r) => reports.push(r),
                    batch::Outcome::BadInput(m) => return Err(usage(m)),
                }
            }
            print_reports(*format, &reports);
            Ok(report::exit_code(&reports))
        }
        Command::Build(args) => build_cli::run(
            args,
            cli.authfile.as_deref(),
            || credentials(&cli),
            client_options(&cli, ClientOptions::default().max_requests)?,
        )
        .await
        .map(|kind| i32::from(kind.code()))
        .map_err(|e| Exit(i32::from(e.exit_kind().code()), with_chain(&e))),
        Command::Policy {
            command: PolicyCommand::Show { policy },
        } => {
            let policy = Policy::load(policy).map_err(usage)?;
            print!("{}", policy.to_yaml());
            Ok(EXIT_PASS)
        }
    }
}

#[derive(clap::Args)]
struct AssembleArgs {
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
    format: Option<imgcheck::assemble::IndexFormat>,
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

/// `assemble`: the work is in `imgcheck::push`; this parses, prints and maps exit codes.
async fn run_assemble(cli: &Cli, args: &AssembleArgs) -> Result<i32, Exit> {
    use imgcheck::assemble::{ChildSpec, parse_annotations, target_ref};
    use imgcheck::engine::Verdict;
    use imgcheck::push;
    use std::io::Write as _;

    let target = target_ref(&args.target).map_err(usage)?;
    let children = args
        .children
        .iter()
        .map(|c| ChildSpec::parse(c))
        .collect::<Result<Vec<_>, _>>()
        .map_err(usage)?;
    let annotations = parse_annotations(&args.annotations).map_err(usage)?;
    let policy = Policy::load(&args.policy).map_err(usage)?;
    let refs: Vec<ImageRef> = std::iter::once(ImageRef::Registry(target.clone()))
        .chain(children.iter().map(|c| c.reference.clone()))
        .collect();
    let session = session(cli, &refs, 16).await?;
    let request = push::Request {
        target,
        children,
        format: args.format,
        annotations,
        dry_run: args.dry_run,
    };
    let failed = |f: push::Failure| Exit(f.exit_code(), f.to_string());
    let outcome = push::assemble(&session, &request).await.map_err(failed)?;
    let (target, index) = (&request.target, &outcome.index);
    if args.dry_run {
        let mut out = std::io::stdout().lock();
        out.write_all(&index.bytes)
            .and_then(|()| out.flush())
            .map_err(|e| Exit(EXIT_ERROR, format!("cannot write the index: {e}")))?;
        eprintln!(
            "imgcheck: dry run: {target}@{} ({} entries, {}); nothing was pushed",
            index.digest,
            index.entries.len(),
            index.format.media_type()
        );
        return Ok(EXIT_PASS);
    }
    eprintln!("imgcheck: {}", outcome.copied.summary());
    println!("{target}@{}", index.digest);
    let pushed = format!("{target}@{}", index.digest);
    let report = push::verify_pushed(&session, target, &index.digest, &policy)
        .await
        .map_err(|f| Exit(f.exit_code(), format!("{f} (the list {pushed} was pushed)")))?;
    print!("{}", report::text(std::slice::from_ref(&report)));
    match report.verdict {
        Verdict::Pass => Ok(EXIT_PASS),
        Verdict::Fail => Err(Exit(
            EXIT_FAIL,
            format!(
                "{pushed} was pushed but fails policy '{}'; the list stays pushed: fix the \
                 children and run assemble again",
                policy.name
            ),
        )),
        Verdict::Error => Err(Exit(
            EXIT_ERROR,
            format!("{pushed} was pushed but could not be fully verified; the list stays pushed"),
        )),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    verbose::install(cli.verbose);
    // One thread: imgcheck waits on the network; a second worker only added cross-thread
    // wake-ups (measured in scripts/bench, docs/decisions.md). CPU-heavy work (layer
    // decompression) goes to the blocking pool.
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("imgcheck: error: cannot start the async runtime: {e}");
            return ExitCode::from(EXIT_ERROR as u8);
        }
    };
    let code = match runtime.block_on(run(cli)) {
        Ok(code) => code,
        Err(Exit(code, msg)) => {
            eprintln!("imgcheck: {}", msg);
            code
        }
    };
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}

/// The text form of an `InspectView`.
// Temporary: `report::inspect_text` replaces this when the CLI branch is merged.
fn inspect_text(view: &imgcheck::engine::InspectView) -> String {
    let mut out = format!("{}  {}  {}\n", view.reference, view.digest, view.kind);
    out.push_str(&format!(
        "  {:<20} {:<34} {:<34} status\n",
        "entry", "list platform", "config platform"
    ));
    for e in &view.entries {
        let p = |p: &Option<imgcheck::platform::Platform>| {
            p.as_ref().map_or("-".to_string(), |p| p.to_string())
        };
        let short = match e.digest.split_once(':') {
            Some((a, h)) if h.len() > 12 => format!("{a}:{}", &h[..12]),
            _ => e.digest.clone(),
        };
        out.push_str(&format!(
            "  {short:<20} {:<34} {:<34} {}\n",
            p(&e.platform),
            p(&e.config_platform),
            e.status
        ));
    }
    out
}
