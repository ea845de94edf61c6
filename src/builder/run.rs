//! Running a build: Buildah's capabilities first, then the Windows bases, then every job
//! (bounded parallelism, one log file each, progress through a [`Reporter`]), then per image:
//! assemble the list from the pushed per-platform images, push it, and verify it with the
//! image's policy.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use tokio::io::AsyncWriteExt;
use tokio::sync::{Semaphore, watch};

use crate::builder::assembler::Assembler;
use crate::builder::base::BaseInfo;
use crate::builder::buildah::{Passthrough, Version, build_command, parse_step};
use crate::builder::compose::{ComposeImage, StageMode, choose, compose_image};
use crate::builder::error::{JobError, StepError, VerifyError};
use crate::builder::exec::{BUILD_ATTEMPTS, is_transient_setup_failure, read_trimmed, run_logged};
use crate::builder::jobs::Job;
use crate::builder::progress::{JobProgress, Reporter};
use crate::digest::Digest;
use crate::engine::{ImageReport, judge};
use crate::error::one_line;
use crate::graph::WalkOptions;
use crate::platform::WindowsVersion;
use crate::policy::Policy;
use crate::reference::{ImageRef, RegistryRef};
use crate::session::Session;

pub use crate::builder::base::{inspect_base, windows_layers_note};
pub use crate::builder::error::BuildRunError;
pub use crate::builder::exec::{LOG_TAIL_LINES, buildah_version, log_tail};
pub use crate::builder::outcome::{ImageOutcome, ImageResult, JobOutcome, overall};
use crate::builder::rewrite::{StageImage, rewrite_image};

/// Settings of a run beyond the jobs themselves.
#[derive(Debug, Clone)]
pub struct RunSettings {
    /// Builds at once.
    pub jobs: usize,
    /// Options every `buildah` command gets.
    pub passthrough: Passthrough,
    /// `SOURCE_DATE_EPOCH` / `--timestamp`: the times of the Windows layers imgcheck writes
    /// are clamped to it (Buildah gets `--timestamp` through each job's spec).
    pub timestamp: Option<u64>,
    /// How Windows stages are made (`--windows-stage`).
    pub windows_stage: StageMode,
}

/// Builds and pushes one job; returns the pushed digest.
async fn run_job(
    job: &Job,
    pass: &Passthrough,
    view: &dyn JobProgress,
    stop: &mut watch::Receiver<bool>,
) -> Result<Digest, JobError> {
    let mut log = tokio::fs::File::create(&job.log)
        .await
        .map_err(|e| JobError::CreateLog(job.log.clone(), Arc::new(e)))?;
    for f in [&job.spec.iidfile, &job.digestfile] {
        let _ = std::fs::remove_file(f);
    }
    if let Some(note) = &job.stage_note {
        log.write_all(format!("# {note}\n").as_bytes())
            .await
            .map_err(|e| JobError::WriteLog(Arc::new(e)))?;
    }
    build(job, pass, view, stop, &mut log).await?;
    let iidfile = &job.spec.iidfile;
    let image_id =
        read_trimmed(iidfile).map_err(|e| JobError::ImageId(iidfile.clone(), Arc::new(e)))?;
    match &job.compose {
        Some(c) => {
            view.status("writing the Windows stage's files");
            let _ = std::fs::remove_dir_all(&c.files);
        }
        None => view.status(&format!("pushing to {}", job.push_to)),
    }
    let push = job.push_command(&image_id, pass);
    if !run_logged(&push, &mut log, stop, |_| {}).await? {
        return Err(JobError::Push(job.push_to.clone()));
    }
    let digest = read_trimmed(&job.digestfile)
        .map_err(|e| JobError::DigestFile(job.digestfile.clone(), Arc::new(e)))?;
    digest
        .parse::<Digest>()
        .map_err(|e| JobError::Digest(digest.clone(), e))
}

/// `buildah build` for one job; run again once when Buildah's own process setup failed
/// transiently before any step ran ([`is_transient_setup_failure`]).
async fn build(
    job: &Job,
    pass: &Passthrough,
    view: &dyn JobProgress,
    stop: &mut watch::Receiver<bool>,
    log: &mut tokio::fs::File,
) -> Result<(), JobError> {
    for attempt in 1..=BUILD_ATTEMPTS {
        view.status("building");
        let mut transient = false;
        let built = run_logged(&build_command(&job.spec, pass), log, stop, |line| {
            transient |= is_transient_setup_failure(line);
            if let Some(step) = parse_step(line) {
                view.status(&step.to_string());
            }
        })
        .await?;
        if built {
            return Ok(());
        }
        if !transient || attempt == BUILD_ATTEMPTS {
            break;
        }
        let note =
            "# Buildah's process setup failed transiently (sealing memfd copy); building again\n";
        log.write_all(note.as_bytes())
            .await
            .map_err(|e| JobError::WriteLog(Arc::new(e)))?;
    }
    Err(JobError::Build)
}

/// Records a failed job: stops the other builds of its image, shows the failure with the tail
/// of its log.
fn failed(
    reporter: &dyn Reporter,
    view: &dyn JobProgress,
    job: &Job,
    stop: &watch::Sender<bool>,
    error: JobError,
) -> JobOutcome {
    stop.send_replace(true);
    let tail = log_tail(&job.log, LOG_TAIL_LINES);
    let message = one_line(&error);
    view.finish(&format!("FAILED: {message}"));
    reporter.line(&format!(
        "{} {}: {message}; last lines of {}:\n{tail}",
        job.image,
        job.target.label(),
        job.log.display()
    ));
    JobOutcome::Failed { error, tail }
}

/// Runs one job once a build slot is free, unless another build of its image failed first.
async fn run_in_turn(
    job: Job,
    pass: Passthrough,
    permits: Arc<Semaphore>,
    reporter: Arc<dyn Reporter>,
    view: Box<dyn JobProgress>,
    stop_tx: Arc<watch::Sender<bool>>,
) -> JobOutcome {
    let mut stop = stop_tx.subscribe();
    let skipped = |v: &dyn JobProgress| {
        v.finish("skipped: another build of this image failed");
        JobOutcome::Skipped
    };
    let Ok(_permit) = permits.acquire().await else {
        return JobOutcome::Skipped;
    };
    if *stop.borrow() {
        return skipped(&*view);
    }
    match run_job(&job, &pass, &*view, &mut stop).await {
        Ok(d) => {
            let done = match job.compose {
                Some(_) => format!(
                    "files built {}; composed once the builds are done",
                    d.short()
                ),
                None => format!("pushed {}", d.short()),
            };
            view.finish(&done);
            JobOutcome::Pushed(d)
        }
        Err(JobError::Stopped) => skipped(&*view),
        Err(e) => failed(&*reporter, &*view, &job, &stop_tx, e),
    }
}

/// Runs every job, at most `settings.jobs` at once. A failure stops the other builds of the
/// same image (running ones are killed, waiting ones never start); other images go on.
pub async fn run_jobs(
    jobs: &[Job],
    settings: &RunSettings,
    reporter: &Arc<dyn Reporter>,
) -> Vec<JobOutcome> {
    let permits = Arc::new(Semaphore::new(settings.jobs.max(1)));
    let mut stops: BTreeMap<String, Arc<watch::Sender<bool>>> = BTreeMap::new();
    let mut handles = Vec::new();
    for job in jobs {
        let stop_tx = Arc::clone(
            stops
                .entry(job.image.clone())
                .or_insert_with(|| Arc::new(watch::channel(false).0)),
        );
        let view = reporter.job(&format!("{} {}", job.image, job.target.label()));
        handles.push(tokio::spawn(run_in_turn(
            job.clone(),
            settings.passthrough.clone(),
            Arc::clone(&permits),
            Arc::clone(reporter),
            view,
            stop_tx,
        )));
    }
    let mut outcomes = Vec::with_capacity(handles.len());
    for h in handles {
        outcomes.push(h.await.unwrap_or_else(|e| JobOutcome::Failed {
            error: JobError::Task(Arc::new(e)),
            tail: String::new(),
        }));
    }
    drop(stops);
    reporter.jobs_done();
    outcomes
}

/// Verifies a pushed list with `policy` (with `--deep` when asked) and returns the report.
pub async fn verify_list(
    session: &Session,
    list: &RegistryRef,
    policy: &Policy,
    deep: bool,
) -> Result<ImageReport, VerifyError> {
    let reference = ImageRef::Registry(list.clone());
    let graph = session
        .graph(
            &reference,
            WalkOptions {
                jobs: 8,
                deep,
                deep_linux: deep && policy.deep_linux(),
            },
        )
        .await
        .map_err(|e| VerifyError {
            list: list.to_string(),
            source: Arc::new(e),
        })?;
    Ok(judge(&graph, policy, &policy.runtimes))
}

/// Where logs go when `--log-dir` is not given.
pub fn default_log_dir() -> PathBuf {
    std::env::temp_dir().join(format!("imgcheck-build-{}", std::process::id()))
}

/// A whole run: what to build and how.
pub struct Build<'a> {
    /// The jobs, in plan order.
    pub jobs: Vec<Job>,
    /// Per image (plan order): its name, list reference and policy.
    pub images: Vec<(String, RegistryRef, Policy)>,
    /// Run settings.
    pub settings: &'a RunSettings,
    /// Where progress goes.
    pub reporter: Arc<dyn Reporter>,
}

/// A per-platform push destination as a registry reference.
fn registry_ref(s: &str) -> Result<RegistryRef, BuildRunError> {
    match s.parse::<ImageRef>() {
        Ok(ImageRef::Registry(r)) => Ok(r),
        Ok(ImageRef::Layout(_)) => Err(BuildRunError::PushToLayout(s.to_string())),
        Err(e) => Err(BuildRunError::PushReference(Arc::new(e))),
    }
}

/// Per image: the errors of its Windows bases.
type BaseErrors = BTreeMap<String, Vec<StepError>>;

/// A job that ran, and how it ended.
type Done<'a> = (&'a Job, &'a JobOutcome);

impl Build<'_> {
    /// Every registry reference the run touches (for the session's plain-HTTP probing).
    fn references(&self) -> Result<Vec<ImageRef>, BuildRunError> {
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

    /// Tells the version, the log directory (and creates it), and whether imgcheck writes the
    /// Windows layers itself.
    fn prepare(&self, version: Version) -> Result<(), BuildRunError> {
        let has_windows = self.jobs.iter().any(|j| j.target.os == "windows");
        let note = windows_layers_note(version, has_windows);
        let log_dir = self.jobs.first().and_then(|j| j.log.parent());
        if let Some(dir) = log_dir {
            self.reporter.line(&format!(
                "imgcheck: buildah {version}; logs in {}",
                dir.display()
            ));
        }
        if let Some(n) = &note {
            self.reporter.line(&format!("imgcheck: note: {n}"));
        }
        if let Some(dir) = log_dir {
            std::fs::create_dir_all(dir).map_err(|e| BuildRunError::LogDir {
                dir: dir.to_path_buf(),
                source: Arc::new(e),
            })?;
        }
        Ok(())
    }

    /// Checks the Windows bases: a build of the wrong base is refused before it starts, and a
    /// base without os.version gets --os-version so the image (and its list entry) has one.
    async fn check_bases(&mut self, session: &Session) -> BaseErrors {
        let mut errors = BaseErrors::new();
        let mut bases: BTreeMap<(String, String, Option<u16>), Result<BaseInfo, StepError>> =
            BTreeMap::new();
        for job in &mut self.jobs {
            let Some(base) = &job.target.base else {
                continue;
            };
            let build = job.target.build;
            let key = (base.clone(), job.target.arch.clone(), build);
            if !bases.contains_key(&key) {
                let info = inspect_base(session, base, &job.target.arch, build).await;
                bases.insert(key.clone(), info.map_err(StepError::from));
            }
            match &bases[&key] {
                Ok(info) => {
                    if let (None, Some(build)) = (&info.os_version, build) {
                        job.spec.os_version = Some(WindowsVersion::host(build).to_string());
                    }
                    job.base_layers = info.layers.clone();
                    job.base_image = info.image.clone();
                }
                Err(e) => errors.entry(job.image.clone()).or_default().push(e.clone()),
            }
        }
        for (image, errs) in &errors {
            for e in errs {
                self.reporter.line(&format!("{image}: {}", one_line(e)));
            }
        }
        errors
    }

    /// Decides how each Windows stage is made (of the images whose bases are usable) and says
    /// so.
    fn choose_stages(&mut self, base_errors: &BaseErrors) -> Result<(), BuildRunError> {
        let mode = self.settings.windows_stage;
        for job in &mut self.jobs {
            if base_errors.contains_key(&job.image) {
                continue;
            }
            if let Some(note) = choose(job, mode)? {
                let label = job.target.label();
                self.reporter
                    .line(&format!("imgcheck: {} {label}: {note}", job.image));
            }
        }
        Ok(())
    }

    /// Runs it. `session_for` opens the registry session for the references the run
    /// touches; `assembler` makes the lists.
    pub async fn run<S, F>(
        mut self,
        version: Version,
        session_for: S,
        assembler: &impl Assembler,
    ) -> Result<Vec<ImageResult>, BuildRunError>
    where
        S: FnOnce(Vec<ImageRef>) -> F,
        F: std::future::Future<Output = Session>,
    {
        self.prepare(version)?;
        let session = session_for(self.references()?).await;
        let base_errors = self.check_bases(&session).await;
        self.choose_stages(&base_errors)?;
        let runnable: Vec<Job> = self
            .jobs
            .iter()
            .filter(|j| !base_errors.contains_key(&j.image))
            .cloned()
            .collect();
        let outcomes = run_jobs(&runnable, self.settings, &self.reporter).await;
        let done: Vec<Done<'_>> = runnable.iter().zip(&outcomes).collect();
        let mut results = Vec::new();
        for (name, list, policy) in &self.images {
            let mine: Vec<Done<'_>> = done
                .iter()
                .copied()
                .filter(|(j, _)| &j.image == name)
                .collect();
            let outcome = if let Some(errors) = base_errors.get(name) {
                bases_outcome(errors)
            } else if let Some(failed) = jobs_outcome(&mine) {
                failed
            } else {
                let step = ListStep {
                    session: &session,
                    list,
                    policy,
                    write_windows_layers: !version.writes_windows_layers(),
                    clamp: self.settings.timestamp,
                };
                step.run(&mine, assembler).await?
            };
            results.push(ImageResult {
                image: name.clone(),
                list: list.to_string(),
                outcome,
            });
        }
        Ok(results)
    }
}

/// The outcome of an image whose Windows bases cannot be used: failed when any is wrong,
/// incomplete when they only could not be read.
fn bases_outcome(errors: &[StepError]) -> ImageOutcome {
    let failed: Vec<String> = errors
        .iter()
        .filter(|e| !e.is_unavailable())
        .map(|e| one_line(e))
        .collect();
    if failed.is_empty() {
        let all: Vec<String> = errors.iter().map(|e| one_line(e)).collect();
        ImageOutcome::Incomplete(all.join("; "))
    } else {
        ImageOutcome::BuildFailed(failed)
    }
}

/// Why a child could not be made ready for its list: the image's step failed, or the run
/// cannot go on.
enum StepOrRun {
    Step(String, StepError),
    Run(BuildRunError),
}

/// The outcome of an image one of whose steps failed: incomplete when a registry could not be
/// reached, failed otherwise.
fn step_failed(what: &str, e: &StepError) -> ImageOutcome {
    let message = format!("{what}: {}", one_line(e));
    if e.is_unavailable() {
        ImageOutcome::Incomplete(message)
    } else {
        ImageOutcome::BuildFailed(vec![message])
    }
}

/// The outcome of an image some of whose jobs failed; `None` when none did.
fn jobs_outcome(mine: &[Done<'_>]) -> Option<ImageOutcome> {
    let failures: Vec<(String, bool)> = mine
        .iter()
        .filter_map(|(j, o)| match o {
            JobOutcome::Failed { error, .. } => Some((
                format!(
                    "{}: {} (log: {})",
                    j.target.label(),
                    one_line(error),
                    j.log.display()
                ),
                error.after_build(),
            )),
            _ => None,
        })
        .collect();
    if failures.is_empty() {
        return None;
    }
    let messages: Vec<String> = failures.iter().map(|(m, _)| m.clone()).collect();
    // Only pushes failed: the images are fine, the registry was not reachable.
    Some(if failures.iter().all(|(_, push)| *push) {
        ImageOutcome::Incomplete(messages.join("; "))
    } else {
        ImageOutcome::BuildFailed(messages)
    })
}

/// The last step of one image: the Windows layers written (Buildah before 1.44), its list
/// assembled from the pushed images, then verified (with `--deep` when it has Windows images).
struct ListStep<'s> {
    session: &'s Session,
    list: &'s RegistryRef,
    policy: &'s Policy,
    /// Whether imgcheck writes the layers of the Windows stages (Buildah before 1.44).
    write_windows_layers: bool,
    /// `SOURCE_DATE_EPOCH` / `--timestamp`.
    clamp: Option<u64>,
}

impl ListStep<'_> {
    /// The pushed image of one job, with its Windows layers written when this step writes them.
    async fn child(&self, job: &Job, digest: &Digest) -> Result<RegistryRef, StepOrRun> {
        let pushed = registry_ref(&job.push_to).map_err(StepOrRun::Run)?;
        let work = job.log.with_extension("oci");
        let failed = |e| StepOrRun::Step(job.target.label(), StepError::Windows(Arc::new(e)));
        if let (Some(c), Some(base)) = (&job.compose, &job.base_image) {
            let _ = std::fs::remove_dir_all(&work);
            let image = ComposeImage {
                push_to: &pushed,
                files: (&c.files, digest),
                base,
                plan: &c.plan,
                work: &work,
                clamp: self.clamp,
                os_version: job.spec.os_version.clone(),
            };
            let composed = compose_image(self.session, &image).await.map_err(failed)?;
            return Ok(pushed.with_digest(&composed));
        }
        if job.target.os != "windows" || !self.write_windows_layers {
            return Ok(pushed.with_digest(digest));
        }
        let _ = std::fs::remove_dir_all(&work);
        let image = StageImage {
            pushed: &pushed,
            digest,
            base_layers: &job.base_layers,
            work: &work,
            clamp: self.clamp,
        };
        let written = rewrite_image(self.session, &image).await.map_err(failed)?;
        Ok(pushed.with_digest(&written))
    }

    async fn run(
        &self,
        mine: &[Done<'_>],
        assembler: &impl Assembler,
    ) -> Result<ImageOutcome, BuildRunError> {
        let mut children = Vec::new();
        for &(job, outcome) in mine {
            if let JobOutcome::Pushed(d) = outcome {
                match self.child(job, d).await {
                    Ok(c) => children.push(c),
                    Err(StepOrRun::Run(e)) => return Err(e),
                    Err(StepOrRun::Step(label, e)) => return Ok(step_failed(&label, &e)),
                }
            }
        }
        let deep = mine.iter().any(|(j, _)| j.target.os == "windows");
        let list = self.list;
        let digest = match assembler
            .assemble(self.session, &children, list, self.policy)
            .await
        {
            Ok(d) => d,
            Err(e) => return Ok(step_failed(&format!("assembling {list}"), &e)),
        };
        let pinned = list.with_digest(&digest);
        Ok(
            match verify_list(self.session, &pinned, self.policy, deep).await {
                Ok(mut report) => {
                    report.reference = list.to_string();
                    ImageOutcome::Verified {
                        digest,
                        report: Box::new(report),
                    }
                }
                Err(e) => ImageOutcome::Incomplete(one_line(&e)),
            },
        )
    }
}
