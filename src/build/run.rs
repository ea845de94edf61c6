//! Running a build: Buildah's capabilities first, then the Windows bases, then every job
//! (bounded parallelism, one log file each, progress), then per image: assemble the list from
//! the pushed per-platform images, push it, and verify it with the image's policy.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::{Semaphore, mpsc, watch};

use crate::build::buildah::{
    Passthrough, Version, build_command, parse_step, push_command, shell_line, version_command,
};
use crate::build::jobs::Job;
use crate::digest::Digest;
use crate::engine::{ImageReport, judge, resolve};
use crate::graph::{Content, Problem, WalkOptions};
use crate::platform::{Platform, RuntimeProfile, WindowsVersion};
use crate::policy::Policy;
use crate::reference::{ImageRef, RegistryRef};
use crate::session::Session;
use crate::source::FetchError;

/// Lines of a failed build's log printed with the failure.
pub const LOG_TAIL_LINES: usize = 25;

/// Why a run could not start or finish as a whole.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RunError {
    /// Bad plan or arguments (exit 2).
    #[error("{0}")]
    Usage(String),
    /// The environment cannot do it: Buildah missing or too old, logs not writable (exit 3).
    #[error("{0}")]
    Incomplete(String),
}

/// Why a step for one image stopped: the image (or its input) is wrong, or the step could not
/// be completed (network, registry).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StepError {
    /// The image cannot be made as planned (exit 1).
    #[error("{0}")]
    Failed(String),
    /// The step could not be completed (exit 3).
    #[error("{0}")]
    Unavailable(String),
}

/// Settings of a run beyond the jobs themselves.
#[derive(Debug, Clone)]
pub struct RunSettings {
    /// Builds at once.
    pub jobs: usize,
    /// Options every `buildah` command gets.
    pub passthrough: Passthrough,
    /// Build Windows targets with a Buildah that writes Linux-format layers (labs only).
    pub allow_legacy_windows_layers: bool,
    /// Draw progress bars (a terminal); otherwise print plain lines.
    pub progress: bool,
}

impl RunSettings {
    /// Progress bars when standard output is a terminal (and standard error, where they are
    /// drawn, too); plain lines otherwise.
    pub fn progress_default() -> bool {
        std::io::stdout().is_terminal() && std::io::stderr().is_terminal()
    }
}

/// `buildah version`, parsed. A missing `buildah` names the package to install.
pub async fn buildah_version() -> Result<Version, RunError> {
    let cmd = version_command();
    let out = tokio::process::Command::new(&cmd[0])
        .args(&cmd[1..])
        .stdin(Stdio::null())
        .output()
        .await
        .map_err(|e| {
            RunError::Incomplete(if e.kind() == std::io::ErrorKind::NotFound {
                "buildah not found: install it (Debian/Ubuntu: apt-get install buildah; \
                 Fedora/RHEL: dnf install buildah)"
                    .to_string()
            } else {
                format!("cannot run buildah version: {e}")
            })
        })?;
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(RunError::Incomplete(format!(
            "buildah version failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Version::from_output(&text).ok_or_else(|| {
        RunError::Incomplete(format!(
            "cannot read the version from `buildah version`: {}",
            text.trim()
        ))
    })
}

/// Decides whether this Buildah may build Windows targets. `Ok(Some(warning))` when it may
/// only because the legacy flag allows it.
pub fn windows_capability(
    version: Version,
    has_windows: bool,
    allow_legacy: bool,
) -> Result<Option<String>, RunError> {
    if !has_windows || version.writes_windows_layers() {
        return Ok(None);
    }
    let why = format!(
        "buildah {version} writes the layers it adds to a Windows image in the Linux layout (no \
         Files/, no Hives/); the image gets a Windows config but will not run on Windows. \
         Windows targets need Buildah >= {} (containers/buildah#6592)",
        crate::build::buildah::WINDOWS_LAYERS_SINCE
    );
    if allow_legacy {
        Ok(Some(format!(
            "{why}. Building anyway (--allow-legacy-windows-layers); the lists are verified with \
             --deep, which reports windows-layer-format"
        )))
    } else {
        Err(RunError::Incomplete(format!(
            "{why}. Upgrade Buildah, build only Linux images, or pass \
             --allow-legacy-windows-layers for a lab build that will not run on Windows"
        )))
    }
}

/// What a Windows base image turned out to be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BaseInfo {
    /// Its config's os.version, if any.
    pub os_version: Option<String>,
}

/// Reads a Windows base's config (through a list when it is one, selecting as a node of that
/// build would) and checks it is a Windows image of the planned build.
pub async fn inspect_base(
    session: &Session,
    base: &str,
    arch: &str,
    build: u16,
) -> Result<BaseInfo, StepError> {
    let failed = |m: String| StepError::Failed(format!("Windows base {base}{m}"));
    let reference: ImageRef = base.parse().map_err(|e| failed(format!(": {e}")))?;
    let graph = match session.graph(&reference, WalkOptions::default()).await {
        Ok(g) => g,
        Err(FetchError::Unavailable(m)) => {
            return Err(StepError::Unavailable(format!(
                "cannot read Windows base {base}: {m}"
            )));
        }
        Err(e) => return Err(failed(format!(": {e}"))),
    };
    let host =
        Platform::new("windows", arch).with_os_version(&WindowsVersion::host(build).to_string());
    let node = match &graph.root.content {
        Content::Index { index, children } => {
            let r = resolve(&graph, &host, RuntimeProfile::DEFAULT);
            let digest = r
                .digest
                .ok_or_else(|| failed(format!(" has no entry for windows/{arch} build {build}")))?;
            index
                .manifests
                .iter()
                .zip(children)
                .find(|(d, _)| d.digest == digest)
                .and_then(|(_, c)| c.as_ref())
                .ok_or_else(|| failed(format!(": entry {digest} could not be read")))?
        }
        _ => &graph.root,
    };
    let image = match &node.content {
        Content::Image(i) => i,
        Content::Problem(Problem::Unavailable(m)) => {
            return Err(StepError::Unavailable(format!(
                "cannot read Windows base {base}: {m}"
            )));
        }
        other => return Err(failed(format!(" is not a readable image ({other:?})"))),
    };
    let config = match &image.config {
        Ok(c) => c,
        Err(Problem::Unavailable(m)) => {
            return Err(StepError::Unavailable(format!(
                "cannot read the config of Windows base {base}: {m}"
            )));
        }
        Err(p) => return Err(failed(format!(": config unusable: {p:?}"))),
    };
    let platform = config.platform();
    if !platform.is_windows() {
        return Err(failed(format!(
            " is a {} image, not a Windows one",
            platform.os_arch()
        )));
    }
    if let Some(v) = &platform.os_version {
        match WindowsVersion::parse(v) {
            Some(w) if w.build == build => {}
            Some(w) => {
                return Err(failed(format!(
                    " is build {} (os.version {v}), but the plan builds it as {build}",
                    w.build
                )));
            }
            None => return Err(failed(format!(": os.version '{v}' is unreadable"))),
        }
    }
    Ok(BaseInfo {
        os_version: platform.os_version,
    })
}

/// The end of one job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobOutcome {
    /// Built and pushed: the digest of the per-platform image.
    Pushed(Digest),
    /// It failed; the message and the tail of its log.
    Failed {
        /// What failed.
        message: String,
        /// Last lines of the log.
        tail: String,
        /// The build succeeded but the push did not (registry, network, credentials): the run
        /// could not be completed rather than the image being bad.
        push: bool,
    },
    /// Not run, or stopped, because another build of the same image failed.
    Skipped,
}

/// One line per build: a progress bar on a terminal, plain lines on standard error otherwise.
struct View {
    multi: Option<MultiProgress>,
}

struct JobView {
    bar: Option<ProgressBar>,
    label: String,
}

impl View {
    fn new(progress: bool) -> View {
        View {
            multi: progress.then(|| MultiProgress::with_draw_target(ProgressDrawTarget::stderr())),
        }
    }

    fn job(&self, label: String) -> JobView {
        let bar = self.multi.as_ref().map(|m| {
            let bar = m.add(ProgressBar::new_spinner());
            bar.set_style(
                ProgressStyle::with_template("{spinner} {prefix:40} {wide_msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            bar.set_prefix(label.clone());
            bar.set_message("waiting");
            bar.enable_steady_tick(Duration::from_millis(200));
            bar
        });
        JobView { bar, label }
    }

    /// A line that must stay visible (failures, warnings).
    fn println(&self, text: &str) {
        match &self.multi {
            Some(m) => {
                if m.println(text).is_err() {
                    eprintln!("{text}");
                }
            }
            None => eprintln!("{text}"),
        }
    }
}

impl JobView {
    fn status(&self, text: &str) {
        match &self.bar {
            Some(b) => b.set_message(text.to_string()),
            None => eprintln!("{}: {text}", self.label),
        }
    }

    fn finish(&self, text: &str) {
        match &self.bar {
            Some(b) => b.finish_with_message(text.to_string()),
            None => eprintln!("{}: {text}", self.label),
        }
    }
}

/// Why a job did not produce an image.
enum JobError {
    /// It failed.
    Failed(String),
    /// The image was built but could not be pushed.
    Push(String),
    /// It was stopped because another build of the same image failed.
    Stopped,
}

impl From<String> for JobError {
    fn from(m: String) -> Self {
        JobError::Failed(m)
    }
}

/// Runs `cmd`, appending its output to `log`; `on_line` sees every line. When `stop` turns
/// true the process is killed and the job ends as stopped.
async fn run_logged(
    cmd: &[String],
    log: &mut tokio::fs::File,
    stop: &mut watch::Receiver<bool>,
    mut on_line: impl FnMut(&str),
) -> Result<bool, JobError> {
    let (program, args) = cmd.split_first().ok_or("empty command".to_string())?;
    let header = format!("$ {}\n", shell_line(cmd));
    log.write_all(header.as_bytes())
        .await
        .map_err(|e| format!("cannot write the log: {e}"))?;
    let mut child = tokio::process::Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("cannot start {program}: {e}"))?;
    let (tx, mut rx) = mpsc::unbounded_channel::<String>();
    let mut readers = Vec::new();
    if let Some(out) = child.stdout.take() {
        let tx = tx.clone();
        readers.push(tokio::spawn(async move {
            let mut lines = BufReader::new(out).lines();
            while let Ok(Some(l)) = lines.next_line().await {
                let _ = tx.send(l);
            }
        }));
    }
    if let Some(err) = child.stderr.take() {
        let tx = tx.clone();
        readers.push(tokio::spawn(async move {
            let mut lines = BufReader::new(err).lines();
            while let Ok(Some(l)) = lines.next_line().await {
                let _ = tx.send(l);
            }
        }));
    }
    drop(tx);
    let mut watching = true;
    loop {
        tokio::select! {
            line = rx.recv() => {
                let Some(line) = line else { break };
                on_line(&line);
                log.write_all(line.as_bytes())
                    .await
                    .and(log.write_all(b"\n").await)
                    .map_err(|e| format!("cannot write the log: {e}"))?;
            }
            changed = stop.changed(), if watching => {
                if changed.is_err() {
                    watching = false;
                } else if *stop.borrow() {
                    terminate(&mut child).await;
                    let _ = log
                        .write_all(b"# stopped: another build of this image failed\n")
                        .await;
                    return Err(JobError::Stopped);
                }
            }
        }
    }
    for r in readers {
        let _ = r.await;
    }
    let status = child
        .wait()
        .await
        .map_err(|e| format!("{program} did not finish: {e}"))?;
    log.write_all(format!("# exit: {status}\n").as_bytes())
        .await
        .map_err(|e| format!("cannot write the log: {e}"))?;
    Ok(status.success())
}

/// Ends a build: SIGTERM first, so Buildah removes its build container and stops the RUN it
/// is in; SIGKILL when it has not exited after 10 s.
async fn terminate(child: &mut tokio::process::Child) {
    let pid = child
        .id()
        .and_then(|id| i32::try_from(id).ok())
        .and_then(rustix::process::Pid::from_raw);
    if let Some(pid) = pid
        && rustix::process::kill_process(pid, rustix::process::Signal::TERM).is_ok()
        && tokio::time::timeout(Duration::from_secs(10), child.wait())
            .await
            .is_ok()
    {
        return;
    }
    let _ = child.kill().await;
}

/// The last `n` lines of a log file.
pub fn log_tail(path: &Path, n: usize) -> String {
    match std::fs::read(path) {
        Ok(bytes) => {
            let text = String::from_utf8_lossy(&bytes);
            let lines: Vec<&str> = text.lines().collect();
            lines[lines.len().saturating_sub(n)..].join("\n")
        }
        Err(e) => format!("<cannot read {}: {e}>", path.display()),
    }
}

fn read_trimmed(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path)
        .map(|s| s.trim().to_string())
        .map_err(|e| format!("cannot read {}: {e}", path.display()))
}

/// Builds and pushes one job; returns the pushed digest.
async fn run_job(
    job: &Job,
    pass: &Passthrough,
    view: &JobView,
    stop: &mut watch::Receiver<bool>,
) -> Result<Digest, JobError> {
    let mut log = tokio::fs::File::create(&job.log)
        .await
        .map_err(|e| format!("cannot create {}: {e}", job.log.display()))?;
    for f in [&job.spec.iidfile, &job.digestfile] {
        let _ = std::fs::remove_file(f);
    }
    view.status("building");
    let built = run_logged(&build_command(&job.spec, pass), &mut log, stop, |line| {
        if let Some(step) = parse_step(line) {
            view.status(&step.to_string());
        }
    })
    .await?;
    if !built {
        return Err(JobError::Failed("buildah build failed".to_string()));
    }
    let image_id = read_trimmed(&job.spec.iidfile)?;
    view.status(&format!("pushing to {}", job.push_to));
    let pushed = run_logged(
        &push_command(&image_id, &job.push_to, &job.digestfile, pass),
        &mut log,
        stop,
        |_| {},
    )
    .await?;
    if !pushed {
        return Err(JobError::Push(format!(
            "buildah push to {} failed",
            job.push_to
        )));
    }
    let digest = read_trimmed(&job.digestfile).map_err(JobError::Push)?;
    digest.parse::<Digest>().map_err(|e| {
        JobError::Failed(format!(
            "buildah push wrote an unreadable digest '{digest}': {e}"
        ))
    })
}

/// Records a failed job: stops the other builds of its image, shows the failure with the tail
/// of its log.
fn failed(
    view: &View,
    job_view: &JobView,
    job: &Job,
    label: &str,
    stop: &watch::Sender<bool>,
    message: String,
    push: bool,
) -> JobOutcome {
    stop.send_replace(true);
    let tail = log_tail(&job.log, LOG_TAIL_LINES);
    job_view.finish(&format!("FAILED: {message}"));
    view.println(&format!(
        "{label}: {message}; last lines of {}:\n{tail}",
        job.log.display()
    ));
    JobOutcome::Failed {
        message,
        tail,
        push,
    }
}

/// Runs every job, at most `settings.jobs` at once. A failure stops the other builds of the
/// same image (running ones are killed, waiting ones never start); other images go on.
pub async fn run_jobs(jobs: &[Job], settings: &RunSettings) -> Vec<JobOutcome> {
    let view = Arc::new(View::new(settings.progress));
    let permits = Arc::new(Semaphore::new(settings.jobs.max(1)));
    let mut stops: BTreeMap<String, Arc<watch::Sender<bool>>> = BTreeMap::new();
    let mut handles = Vec::new();
    for job in jobs {
        let stop_tx = Arc::clone(
            stops
                .entry(job.image.clone())
                .or_insert_with(|| Arc::new(watch::channel(false).0)),
        );
        let mut stop = stop_tx.subscribe();
        let job = job.clone();
        let view = Arc::clone(&view);
        let permits = Arc::clone(&permits);
        let pass = settings.passthrough.clone();
        let label = format!("{} {}", job.image, job.target.label());
        let job_view = view.job(label.clone());
        handles.push(tokio::spawn(async move {
            let skipped = |v: &JobView| {
                v.finish("skipped: another build of this image failed");
                JobOutcome::Skipped
            };
            let Ok(_permit) = permits.acquire().await else {
                return JobOutcome::Skipped;
            };
            if *stop.borrow() {
                return skipped(&job_view);
            }
            match run_job(&job, &pass, &job_view, &mut stop).await {
                Ok(d) => {
                    job_view.finish(&format!("pushed {}", d.short()));
                    JobOutcome::Pushed(d)
                }
                Err(JobError::Stopped) => skipped(&job_view),
                Err(JobError::Failed(message)) => {
                    failed(&view, &job_view, &job, &label, &stop_tx, message, false)
                }
                Err(JobError::Push(message)) => {
                    failed(&view, &job_view, &job, &label, &stop_tx, message, true)
                }
            }
        }));
    }
    let mut outcomes = Vec::with_capacity(handles.len());
    for h in handles {
        outcomes.push(h.await.unwrap_or_else(|e| JobOutcome::Failed {
            message: format!("the build task ended abnormally: {e}"),
            tail: String::new(),
            push: false,
        }));
    }
    drop(stops);
    if let Some(m) = &view.multi {
        let _ = m.clear();
    }
    outcomes
}

/// How one image of the plan ended.
#[derive(Debug, Clone)]
pub enum ImageOutcome {
    /// Its list was pushed and verified.
    Verified {
        /// The list's digest.
        digest: Digest,
        /// The verify report.
        report: Box<ImageReport>,
    },
    /// A build (or push) of it failed.
    BuildFailed(Vec<String>),
    /// Its list could not be assembled, pushed or verified.
    Incomplete(String),
}

/// One row of the final table.
#[derive(Debug, Clone)]
pub struct ImageResult {
    /// Plan name.
    pub image: String,
    /// `REGISTRY/NAMESPACE/IMAGE:TAG`.
    pub list: String,
    /// How it ended.
    pub outcome: ImageOutcome,
}

/// Verifies a pushed list with `policy` (with `--deep` when asked) and returns the report.
pub async fn verify_list(
    session: &Session,
    list: &RegistryRef,
    policy: &Policy,
    deep: bool,
) -> Result<ImageReport, String> {
    let reference = ImageRef::Registry(list.clone());
    let graph = session
        .graph(&reference, WalkOptions { jobs: 8, deep })
        .await
        .map_err(|e| format!("cannot verify {list}: {e}"))?;
    Ok(judge(&graph, policy, &policy.runtimes))
}

/// The final table: image → list digest → verdict.
pub fn table(results: &[ImageResult]) -> String {
    let mut out = format!("{:<28} {:<73} {}\n", "image", "list digest", "verdict");
    for r in results {
        let (digest, verdict) = match &r.outcome {
            ImageOutcome::Verified { digest, report } => {
                let mut errors: Vec<&str> = Vec::new();
                for f in &report.findings {
                    if f.severity == crate::engine::Severity::Error
                        && !errors.contains(&f.rule.id())
                    {
                        errors.push(f.rule.id());
                    }
                }
                let verdict = format!("{:?}", report.verdict).to_lowercase();
                (
                    digest.to_string(),
                    if errors.is_empty() {
                        verdict
                    } else {
                        format!("{verdict} ({})", errors.join(", "))
                    },
                )
            }
            ImageOutcome::BuildFailed(why) => {
                ("-".to_string(), format!("build failed: {}", why.join("; ")))
            }
            ImageOutcome::Incomplete(why) => ("-".to_string(), format!("error: {why}")),
        };
        out.push_str(&format!("{:<28} {:<73} {verdict}\n", r.image, digest));
    }
    out
}

/// Exit code for a run: 1 when any image failed to build or fails its policy, else 3 when any
/// could not be completed, else 0.
pub fn exit_code(results: &[ImageResult]) -> i32 {
    use crate::engine::Verdict;
    use crate::report::{EXIT_ERROR, EXIT_FAIL, EXIT_PASS};
    let failed = results.iter().any(|r| match &r.outcome {
        ImageOutcome::BuildFailed(_) => true,
        ImageOutcome::Verified { report, .. } => report.verdict == Verdict::Fail,
        ImageOutcome::Incomplete(_) => false,
    });
    let incomplete = results.iter().any(|r| match &r.outcome {
        ImageOutcome::Incomplete(_) => true,
        ImageOutcome::Verified { report, .. } => report.verdict == Verdict::Error,
        ImageOutcome::BuildFailed(_) => false,
    });
    if failed {
        EXIT_FAIL
    } else if incomplete {
        EXIT_ERROR
    } else {
        EXIT_PASS
    }
}

/// Where logs go when `--log-dir` is not given.
pub fn default_log_dir() -> PathBuf {
    std::env::temp_dir().join(format!("imgcheck-build-{}", std::process::id()))
}

/// The assembly step: the pushed per-platform images of one image become its list, pushed to
/// `target`. Implemented over the assemble code ([`crate::assemble`]), not `buildah manifest`,
/// so every entry's platform (os.version included) is copied from the image's config.
pub trait Assembler {
    /// Assembles and pushes the list; returns its digest.
    fn assemble(
        &self,
        session: &Session,
        children: &[RegistryRef],
        target: &RegistryRef,
    ) -> impl std::future::Future<Output = Result<Digest, StepError>>;
}

/// A whole run: what to build and how.
pub struct Build<'a> {
    /// The jobs, in plan order.
    pub jobs: Vec<Job>,
    /// Per image (plan order): its name, list reference and policy.
    pub images: Vec<(String, RegistryRef, Policy)>,
    /// Run settings.
    pub settings: &'a RunSettings,
}

fn registry_ref(s: &str) -> Result<RegistryRef, RunError> {
    match s.parse::<ImageRef>() {
        Ok(ImageRef::Registry(r)) => Ok(r),
        Ok(ImageRef::Layout(_)) => Err(RunError::Usage(format!(
            "{s}: --push needs a registry (REGISTRY/NAMESPACE), not an OCI layout"
        ))),
        Err(e) => Err(RunError::Usage(format!("--push: {e}"))),
    }
}

impl Build<'_> {
    /// Every registry reference the run touches (for the session's plain-HTTP probing).
    fn references(&self) -> Result<Vec<ImageRef>, RunError> {
        let mut refs: Vec<ImageRef> = self
            .images
            .iter()
            .map(|(_, r, _)| ImageRef::Registry(r.clone()))
            .collect();
        for job in &self.jobs {
            refs.push(ImageRef::Registry(registry_ref(&job.push_to)?));
            if let Some(b) = &job.target.base
                && let Ok(r) = b.parse::<ImageRef>()
            {
                refs.push(r);
            }
        }
        Ok(refs)
    }

    /// Runs it. `session_for` opens the registry session for the references the run
    /// touches; `assembler` makes the lists.
    pub async fn run<S, F>(
        mut self,
        version: Version,
        session_for: S,
        assembler: &impl Assembler,
    ) -> Result<Vec<ImageResult>, RunError>
    where
        S: FnOnce(Vec<ImageRef>) -> F,
        F: std::future::Future<Output = Session>,
    {
        let has_windows = self.jobs.iter().any(|j| j.target.build.is_some());
        let legacy = windows_capability(
            version,
            has_windows,
            self.settings.allow_legacy_windows_layers,
        )?;
        let view = View::new(false);
        if let Some(dir) = self.jobs.first().and_then(|j| j.log.parent()) {
            view.println(&format!(
                "imgcheck: buildah {version}; logs in {}",
                dir.display()
            ));
        }
        if let Some(w) = &legacy {
            view.println(&format!("imgcheck: warning: {w}"));
        }
        if let Some(dir) = self.jobs.first().and_then(|j| j.log.parent()) {
            std::fs::create_dir_all(dir).map_err(|e| {
                RunError::Incomplete(format!(
                    "cannot create the log directory {}: {e}",
                    dir.display()
                ))
            })?;
        }
        let session = session_for(self.references()?).await;

        // Windows bases: a build of the wrong base is refused before it starts, and a base
        // without os.version gets --os-version so the image (and its list entry) has one.
        let mut base_errors: BTreeMap<String, Vec<StepError>> = BTreeMap::new();
        let mut bases: BTreeMap<(String, String, u16), Result<BaseInfo, StepError>> =
            BTreeMap::new();
        for job in &mut self.jobs {
            let (Some(base), Some(build)) = (&job.target.base, job.target.build) else {
                continue;
            };
            let key = (base.clone(), job.target.arch.clone(), build);
            if !bases.contains_key(&key) {
                let info = inspect_base(&session, base, &job.target.arch, build).await;
                bases.insert(key.clone(), info);
            }
            match &bases[&key] {
                Ok(info) if info.os_version.is_none() => {
                    job.spec.os_version = Some(WindowsVersion::host(build).to_string());
                }
                Ok(_) => {}
                Err(e) => base_errors
                    .entry(job.image.clone())
                    .or_default()
                    .push(e.clone()),
            }
        }
        let runnable: Vec<Job> = self
            .jobs
            .iter()
            .filter(|j| !base_errors.contains_key(&j.image))
            .cloned()
            .collect();
        for (image, errors) in &base_errors {
            for e in errors {
                view.println(&format!("{image}: {e}"));
            }
        }
        let outcomes = run_jobs(&runnable, self.settings).await;

        let mut results = Vec::new();
        for (name, list, policy) in &self.images {
            let row = |outcome| ImageResult {
                image: name.clone(),
                list: list.to_string(),
                outcome,
            };
            if let Some(errors) = base_errors.get(name) {
                let failed: Vec<String> = errors
                    .iter()
                    .filter(|e| matches!(e, StepError::Failed(_)))
                    .map(ToString::to_string)
                    .collect();
                let all: Vec<String> = errors.iter().map(ToString::to_string).collect();
                results.push(row(if failed.is_empty() {
                    ImageOutcome::Incomplete(all.join("; "))
                } else {
                    ImageOutcome::BuildFailed(failed)
                }));
                continue;
            }
            let mine: Vec<(&Job, &JobOutcome)> = runnable
                .iter()
                .zip(&outcomes)
                .filter(|(j, _)| &j.image == name)
                .collect();
            let failures: Vec<(String, bool)> = mine
                .iter()
                .filter_map(|(j, o)| match o {
                    JobOutcome::Failed { message, push, .. } => Some((
                        format!("{}: {message} (log: {})", j.target.label(), j.log.display()),
                        *push,
                    )),
                    _ => None,
                })
                .collect();
            if !failures.is_empty() {
                let messages: Vec<String> = failures.iter().map(|(m, _)| m.clone()).collect();
                // Only pushes failed: the images are fine, the registry was not reachable.
                results.push(row(if failures.iter().all(|(_, push)| *push) {
                    ImageOutcome::Incomplete(messages.join("; "))
                } else {
                    ImageOutcome::BuildFailed(messages)
                }));
                continue;
            }
            let mut children = Vec::new();
            for (job, outcome) in &mine {
                if let JobOutcome::Pushed(d) = outcome {
                    children.push(registry_ref(&job.push_to)?.with_digest(d));
                }
            }
            let digest = match assembler.assemble(&session, &children, list).await {
                Ok(d) => d,
                Err(StepError::Failed(e)) => {
                    results.push(row(ImageOutcome::BuildFailed(vec![format!(
                        "assembling {list}: {e}"
                    )])));
                    continue;
                }
                Err(StepError::Unavailable(e)) => {
                    results.push(row(ImageOutcome::Incomplete(format!(
                        "assembling {list}: {e}"
                    ))));
                    continue;
                }
            };
            let pinned = list.with_digest(&digest);
            match verify_list(&session, &pinned, policy, legacy.is_some()).await {
                Ok(mut report) => {
                    report.reference = list.to_string();
                    results.push(row(ImageOutcome::Verified {
                        digest,
                        report: Box::new(report),
                    }))
                }
                Err(e) => results.push(row(ImageOutcome::Incomplete(e))),
            }
        }
        Ok(results)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{Finding, Rule, Severity, Verdict};

    fn v(s: &str) -> Version {
        Version::parse(s).unwrap()
    }

    #[test]
    fn windows_targets_need_buildah_1_44_or_the_flag() {
        // (version, Windows targets, flag) → refused / warned / silent
        let cases = [
            ("1.28.2", true, false, "refused"),
            ("1.43.9", true, false, "refused"),
            ("1.28.2", true, true, "warned"),
            ("1.28.2", false, false, "silent"),
            ("1.44.0", true, false, "silent"),
            ("1.45.1", true, true, "silent"),
        ];
        for (version, windows, flag, want) in cases {
            let got = match windows_capability(v(version), windows, flag) {
                Err(RunError::Incomplete(m)) => {
                    assert!(
                        m.contains(&format!("buildah {version} writes"))
                            && m.contains("Buildah >= 1.44.0")
                            && m.contains("--allow-legacy-windows-layers"),
                        "{m}"
                    );
                    "refused"
                }
                Err(e) => panic!("{version}: unexpected {e:?}"),
                Ok(Some(w)) => {
                    assert!(w.contains("--deep"), "{w}");
                    "warned"
                }
                Ok(None) => "silent",
            };
            assert_eq!(got, want, "{version} windows={windows} flag={flag}");
        }
    }

    fn report(verdict: Verdict, rules: &[Rule]) -> Box<ImageReport> {
        Box::new(ImageReport {
            reference: "r".into(),
            digest: None,
            verdict,
            findings: rules
                .iter()
                .map(|r| Finding {
                    rule: *r,
                    severity: Severity::Error,
                    message: String::new(),
                    hint: "",
                    digest: None,
                    host: None,
                })
                .collect(),
            hosts: vec![],
        })
    }

    fn result(image: &str, outcome: ImageOutcome) -> ImageResult {
        ImageResult {
            image: image.into(),
            list: format!("reg/ns/{image}:v1"),
            outcome,
        }
    }

    #[test]
    fn table_and_exit_codes() {
        let d = Digest::sha256(b"list");
        let pass = || ImageOutcome::Verified {
            digest: d.clone(),
            report: report(Verdict::Pass, &[]),
        };
        let fail = ImageOutcome::Verified {
            digest: d.clone(),
            report: report(
                Verdict::Fail,
                &[
                    Rule::WindowsLayerFormat,
                    Rule::NoMatch,
                    Rule::WindowsLayerFormat,
                ],
            ),
        };
        let results = [
            result("a", pass()),
            result("b", fail),
            result(
                "c",
                ImageOutcome::BuildFailed(vec!["linux/amd64: boom".into()]),
            ),
            result("d", ImageOutcome::Incomplete("registry down".into())),
        ];
        let t = table(&results);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 5);
        assert!(lines[0].starts_with("image") && lines[0].ends_with("verdict"));
        assert!(
            lines[1].starts_with("a ")
                && lines[1].contains(&d.to_string())
                && lines[1].ends_with(" pass")
        );
        assert!(
            lines[2].ends_with(" fail (windows-layer-format, no-match)"),
            "{}",
            lines[2]
        );
        assert!(lines[3].ends_with(" build failed: linux/amd64: boom"));
        assert!(lines[4].ends_with(" error: registry down"));
        let cases: [(Vec<ImageResult>, i32); 5] = [
            (vec![result("a", pass())], 0),
            (results.to_vec(), 1),
            (vec![result("a", pass()), results[2].clone()], 1),
            (vec![result("a", pass()), results[3].clone()], 3),
            (
                vec![result(
                    "e",
                    ImageOutcome::Verified {
                        digest: d.clone(),
                        report: report(Verdict::Error, &[]),
                    },
                )],
                3,
            ),
        ];
        for (rs, want) in cases {
            assert_eq!(exit_code(&rs), want, "{}", table(&rs));
        }
    }

    #[test]
    fn log_tails() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("x.log");
        let text: String = (1..=30).map(|i| format!("line {i}\n")).collect();
        std::fs::write(&log, text).unwrap();
        let tail = log_tail(&log, 3);
        assert_eq!(tail, "line 28\nline 29\nline 30");
        assert!(log_tail(&dir.path().join("none"), 3).starts_with("<cannot read"));
    }
}
