//! What a run is asked to verify, as plain data ([`Inputs`]), and reading the local part of
//! it: the policy and the nodes, reference lists and ImageSets, pod templates ([`Inputs::plan`]).

use std::path::PathBuf;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use super::error::RunError;
use super::gather::{Connection, ReleasePlan, RunPlan, Verified};
use super::progress::{Note, Progress};
use super::targets::{Target, from_manifests, sandbox};
use super::upgrade::UpgradePlan;
use super::verify::Settings;
use crate::cluster::manifests;
use crate::cluster::nodes::{self, NodeRuntime, OddNodes};
use crate::cluster::upgrade::UpgradeTo;
use crate::engine::Origin;
use crate::escape::escape;
use crate::graph::WalkOptions;
use crate::input::{DEFAULT_MAX_INPUT_BYTES, read_imageset, read_reference_list};
use crate::platform::RuntimeProfile;
use crate::policy::{DEFAULT_POLICY, Policy};
use crate::reference::ImageRef;
use crate::scheduling::NodeFacts;
use crate::signature::PublicKey;
use crate::signature::SignatureCheck;
use crate::signature::policy::PolicyFiles;

/// The images a run verifies and how: every input the command line's `verify` takes.
/// Files named `-` are read from standard input (one of them at most).
#[derive(Debug, Clone)]
pub struct Inputs {
    /// References as typed: `REGISTRY/REPO[:TAG][@DIGEST]`, `docker://…`, `oci:DIR…`.
    pub references: Vec<String>,
    /// Reference lists, one reference per line (`--from-file`).
    pub from_files: Vec<String>,
    /// oc-mirror ImageSetConfigurations (`--from-imageset`).
    pub imagesets: Vec<String>,
    /// Pod templates: a file or a directory of them (`--from-manifests`); each image is
    /// judged for the hosts its pods can land on.
    pub manifests: Option<PathBuf>,
    /// A release whose components to verify (`--from-release`).
    pub release: Option<ReleaseInput>,
    /// A cluster's node list (`oc get nodes -o json`), judged instead of the policy's hosts.
    pub nodes: Option<String>,
    /// What a node whose runtime or Windows build cannot be read does: skipped with a note
    /// (the default), or refuses the list (`--strict-nodes`).
    pub odd_nodes: OddNodes,
    /// Embedded policy name or policy file.
    pub policy: String,
    /// Runtime profiles to judge with; empty: the policy's.
    pub runtimes: Vec<RuntimeProfile>,
    /// Also read Windows layers (`--deep`).
    pub deep: bool,
    /// Check that the index and every entry a host pulls are signed and attested
    /// (`--signatures`; also the policy's `signatures.required`, and any `--key`).
    pub signatures: bool,
    /// Public keys that must verify the signatures (`--key`, PEM).
    pub keys: Vec<PathBuf>,
    /// The Linux nodes' signature policy (`--signature-policy`, `--image-policy`,
    /// `--registries-d`): each Linux pull's admission is predicted when one is given.
    pub signature_policy: PolicyFiles,
    /// Registry requests, and images, in flight at once.
    pub jobs: usize,
    /// The size limit of each input file read (`--max-input-size`): node lists, reference
    /// lists, ImageSets, pod templates (each file of a directory).
    pub max_input_bytes: u64,
    /// The Windows nodes' sandbox image in place of the policy's `windows.sandbox_image`
    /// (`--sandbox-image`; `none`: not checked).
    pub sandbox_image: Option<String>,
    /// The images stand for what a whole cluster pulls (the mirror gate): the Windows nodes'
    /// sandbox image is one of them whenever the policy has Windows hosts.
    pub cluster_wide: bool,
    /// Judge the nodes as they are and as WMCO's upgrade to this version leaves them
    /// (`--upgrade`, `--upgrade-to`; needs `nodes`).
    pub upgrade: Option<UpgradeTo>,
}

/// What a run keeps of its node list besides the host rows.
struct NodeInputs {
    /// What placement reads of each node.
    facts: Vec<NodeFacts>,
    /// The runtimes the nodes report, with their profile and why.
    runtimes: Vec<NodeRuntime>,
}

/// A release image whose components a run verifies (`--from-release`).
#[derive(Debug, Clone)]
pub struct ReleaseInput {
    /// The release image, as typed.
    pub reference: String,
    /// The components to verify (tags of its image-references); empty: the policy's
    /// `release.components`.
    pub components: Vec<String>,
}

impl Default for Inputs {
    fn default() -> Inputs {
        Inputs {
            references: Vec::new(),
            from_files: Vec::new(),
            imagesets: Vec::new(),
            manifests: None,
            release: None,
            nodes: None,
            odd_nodes: OddNodes::Skip,
            policy: DEFAULT_POLICY.to_string(),
            runtimes: Vec::new(),
            deep: false,
            signatures: false,
            keys: Vec::new(),
            signature_policy: PolicyFiles::default(),
            jobs: 16,
            max_input_bytes: DEFAULT_MAX_INPUT_BYTES,
            sandbox_image: None,
            cluster_wide: false,
            upgrade: None,
        }
    }
}

impl Inputs {
    /// Reads the inputs, gathers their images through one session and verifies them:
    /// [`Inputs::plan_within`], then [`RunPlan::verify`], all within the connection's
    /// `--timeout` (counted from its `clock_start`, else from now).
    pub async fn verify(
        &self,
        mut connection: Connection,
        progress: &dyn Progress,
    ) -> Result<Verified, RunError> {
        let started = *connection
            .options
            .clock_start
            .get_or_insert_with(Instant::now);
        let deadline = connection.options.deadline.map(|d| (started + d, d));
        self.plan_within(deadline, progress)?
            .verify(connection, progress)
            .await
    }

    /// [`Inputs::plan`], stopped when `deadline` (an instant, and the `--timeout` it comes
    /// from) passes first (`read_within`); notes are told once the plan is read.
    pub fn plan_within(
        &self,
        deadline: Option<(Instant, std::time::Duration)>,
        progress: &dyn Progress,
    ) -> Result<RunPlan, RunError> {
        let inputs = self.clone();
        let plan = read_within(deadline, progress, move |p| inputs.plan(p))?;
        if deadline.is_some() {
            plan.notes.iter().for_each(|n| progress.note(n));
        }
        Ok(plan)
    }

    /// Reads the local inputs, in this order: the policy and the nodes, the references and
    /// their lists, the pod templates, the release's components. Notes are told to
    /// `progress` as they arise. Nothing is fetched yet.
    pub fn plan(&self, progress: &dyn Progress) -> Result<RunPlan, RunError> {
        self.one_stdin()?;
        let mut notes = Vec::new();
        let mut note = |n: Note| {
            progress.note(&n);
            notes.push(n);
        };
        let (policy, cluster) = self.policy(progress, &mut note)?;
        let (cluster, node_runtimes) = match cluster {
            Some(c) => (Some(c.facts), c.runtimes),
            None => (None, Vec::new()),
        };
        let runtimes = match self.runtimes.is_empty() {
            true => policy.runtimes.clone(),
            false => self.runtimes.clone(),
        };
        let listed = self.listed(&policy, progress, &mut note)?;
        // Local input first: a bad manifest is bad input even when the release cannot be read.
        let mut pairs = Vec::new();
        let from_manifests = match &self.manifests {
            Some(path) => {
                progress.reading(&format!("reading --from-manifests {}", path.display()));
                let uses = manifests::read_manifests(path, self.max_input_bytes)?;
                if cluster.is_none() {
                    undecided(&uses).into_iter().for_each(&mut note);
                }
                let workloads = crate::cluster::drivers::workloads(&uses);
                pairs = crate::cluster::drivers::pair_workloads(&workloads, &policy.drivers);
                let (targets, kept_off) = from_manifests(&uses, &policy, cluster.as_deref());
                kept_off.into_iter().for_each(&mut note);
                targets
            }
            None => Vec::new(),
        };
        let release = self.release_plan(&policy)?;
        let upgrade = (self.upgrade.as_ref())
            .map(|to| UpgradePlan::new(to, self.nodes.is_some(), release.is_some()))
            .transpose()?;
        if release.is_none() && listed.is_empty() && from_manifests.is_empty() {
            return Err(RunError::NoReferences);
        }
        let sandbox = self.sandbox(&policy, &from_manifests);
        let signatures = self.signature_check(&policy)?;
        let admission = self.signature_policy.load()?;
        let walk = WalkOptions {
            jobs: self.jobs,
            deep: self.deep,
            deep_linux: self.deep && policy.deep_linux(),
        };
        Ok(RunPlan {
            settings: Settings {
                policy,
                runtimes,
                walk,
                images_in_flight: self.jobs,
                signatures,
                admission,
            },
            notes,
            listed,
            release,
            from_manifests,
            sandbox,
            runtimes: node_runtimes,
            upgrade,
            pairs,
        })
    }

    /// The Windows nodes' sandbox image ([`sandbox`]), when Windows nodes are in scope: a node
    /// list with Windows nodes, a release (its Windows components), pod templates whose pods
    /// can land on Windows hosts, or a cluster-wide run (the mirror gate) under a policy with
    /// Windows hosts. Not for references typed or listed alone to `verify`: their hosts are
    /// the policy's, not a cluster's.
    fn sandbox(&self, policy: &Policy, from_manifests: &[Target]) -> Option<Target> {
        let on_windows = |p: &Policy| p.hosts().iter().any(|h| h.platform.is_windows());
        let templated = from_manifests
            .iter()
            .any(|t| t.scope.as_ref().is_some_and(|s| on_windows(&s.policy)));
        let cluster = self.nodes.is_some() || self.release.is_some() || self.cluster_wide;
        match (cluster && on_windows(policy)) || templated {
            true => match self.sandbox_image.is_some() {
                true => sandbox(policy, "--sandbox-image"),
                false => sandbox(policy, "windows.sandbox_image"),
            },
            false => None,
        }
    }

    /// The release check of signatures, when `--signatures`, a `--key` or the policy asks for
    /// it; each key file read (a bad one is bad input).
    fn signature_check(&self, policy: &Policy) -> Result<Option<SignatureCheck>, RunError> {
        if !(self.signatures || !self.keys.is_empty() || policy.signatures_required()) {
            return Ok(None);
        }
        let keys = (self.keys.iter())
            .map(|path| PublicKey::load(path))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Some(SignatureCheck {
            keys,
            attestations: policy.attestations_required(),
        }))
    }

    /// Refuses two inputs read from standard input (`-`): the first would take it all.
    fn one_stdin(&self) -> Result<(), RunError> {
        let manifests = self.manifests.as_deref().and_then(|p| p.to_str());
        let files = self
            .from_files
            .iter()
            .map(|f| ("--from-file", Some(f.as_str())));
        let sets = self
            .imagesets
            .iter()
            .map(|f| ("--from-imageset", Some(f.as_str())));
        let readers: Vec<&str> = files
            .chain(sets)
            .chain([
                ("--from-manifests", manifests),
                ("--nodes", self.nodes.as_deref()),
            ])
            .filter(|(_, v)| *v == Some("-"))
            .map(|(flag, _)| flag)
            .collect();
        match readers.as_slice() {
            [_, _, ..] => Err(RunError::StdinTwice(readers.join(", "))),
            _ => Ok(()),
        }
    }

    /// The policy, with the sandbox image given in place of its own and the hosts of the node
    /// list in place of its own, and what the run keeps of the node list (`None` without one).
    fn policy(
        &self,
        progress: &dyn Progress,
        note: &mut impl FnMut(Note),
    ) -> Result<(Policy, Option<NodeInputs>), RunError> {
        progress.reading(&format!("reading the policy {}", self.policy));
        let mut policy = Policy::load(&self.policy)?;
        if let Some(image) = &self.sandbox_image {
            policy = policy.with_sandbox_image(image)?;
        }
        Ok(match &self.nodes {
            Some(path) => {
                progress.reading(&format!("reading --nodes {path}"));
                let read = nodes::read_nodes(path, self.max_input_bytes, self.odd_nodes)?;
                read.notes.into_iter().map(Note::NodeRuntime).for_each(note);
                let cluster = NodeInputs {
                    facts: read.nodes,
                    runtimes: read.runtimes,
                };
                (policy.with_hosts(read.hosts), Some(cluster))
            }
            None => (policy, None),
        })
    }

    /// The references typed, then those of the lists, then those of the ImageSets (each with
    /// its entry and what oc-mirror copies of it as its origin; a note for each filter of a
    /// section imgcheck does not read that leaves out a platform the hosts of `policy` need).
    fn listed(
        &self,
        policy: &Policy,
        progress: &dyn Progress,
        note: &mut impl FnMut(Note),
    ) -> Result<Vec<Target>, RunError> {
        progress.reading("parsing the references given");
        let mut refs = self
            .references
            .iter()
            .map(|s| s.parse::<ImageRef>())
            .collect::<Result<Vec<_>, _>>()?;
        for f in &self.from_files {
            progress.reading(&format!("reading --from-file {f}"));
            refs.extend(read_reference_list(f, self.max_input_bytes)?);
        }
        let mut targets: Vec<Target> = refs.into_iter().map(Target::plain).collect();
        for f in &self.imagesets {
            progress.reading(&format!("reading --from-imageset {f}"));
            let set = read_imageset(f, self.max_input_bytes)?;
            let needed = policy
                .hosts()
                .iter()
                .map(|h| h.platform.os_arch())
                .collect();
            set.warnings(&needed)
                .into_iter()
                .map(Note::ImagesetUnread)
                .for_each(&mut *note);
            targets.extend(set.entries.into_iter().map(|e| Target {
                origins: vec![Origin::Imageset {
                    path: f.clone(),
                    entry: e.entry,
                    platforms: e.platforms,
                    target_repo: e.target_repo,
                    target_tag: e.target_tag,
                }],
                reference: e.image,
                scope: None,
                landings: vec![],
            }));
        }
        Ok(targets)
    }

    /// The release and the components to verify: those named, else the policy's.
    fn release_plan(&self, policy: &Policy) -> Result<Option<ReleasePlan>, RunError> {
        let Some(release) = &self.release else {
            return Ok(None);
        };
        let components = match release.components.is_empty() {
            true => policy.release_components(),
            false => release.components.clone(),
        };
        if components.is_empty() {
            return Err(RunError::NoReleaseComponents(policy.name.clone()));
        }
        Ok(Some(ReleasePlan {
            reference: release.reference.parse()?,
            components,
        }))
    }
}

/// Runs `read` (reading local inputs, telling `progress` what it reads) stopped when
/// `deadline` (an instant, and the `--timeout` it comes from) passes first: an input that
/// never ends (a pipe left open, a huge list) ends in [`RunError::Timeout`] naming what was
/// being read. The reading goes on a thread of its own, left behind if the deadline passes
/// (the process then ends), and tells its notes to no one; without a deadline it runs here,
/// telling `progress`.
pub(super) fn read_within<T: Send + 'static>(
    deadline: Option<(Instant, std::time::Duration)>,
    progress: &dyn Progress,
    read: impl FnOnce(&dyn Progress) -> Result<T, RunError> + Send + 'static,
) -> Result<T, RunError> {
    let Some((deadline, limit)) = deadline else {
        return read(progress);
    };
    let stage = Arc::new(Stage::default());
    let (sent, received) = mpsc::channel();
    let tracker = Arc::clone(&stage);
    let read = Arc::new(Mutex::new(Some(read)));
    let on_thread = Arc::clone(&read);
    let reader = std::thread::Builder::new()
        .name("inputs".to_string())
        .spawn(move || {
            let read = on_thread.lock().ok().and_then(|mut r| r.take());
            // Nobody waits any more once the deadline has passed: the result goes nowhere.
            if let Some(read) = read {
                let _ = sent.send(read(&*tracker));
            }
        });
    let Ok(reader) = reader else {
        // No thread: read here, unbounded.
        let read = read.lock().ok().and_then(|mut r| r.take());
        return read.map_or(Err(RunError::NoReferences), |r| r(progress));
    };
    match received.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
        Ok(result) => result,
        Err(RecvTimeoutError::Timeout) => Err(RunError::Timeout {
            what: stage.now(),
            limit,
        }),
        // The reader ended without an answer: it panicked; so does the run.
        Err(RecvTimeoutError::Disconnected) => match reader.join() {
            Err(panic) => std::panic::resume_unwind(panic),
            Ok(()) => unreachable!("the reader sends before it ends"),
        },
    }
}

/// What the plan's reader is doing, for the error when the deadline passes first.
#[derive(Default)]
struct Stage(Mutex<String>);

impl Stage {
    /// What the reader was doing last, escaped for a terminal.
    fn now(&self) -> String {
        let what = self.0.lock().map(|w| w.clone()).unwrap_or_default();
        match what.is_empty() {
            true => "reading the inputs".to_string(),
            false => escape(&what).into_owned(),
        }
    }
}

impl Progress for Stage {
    // Notes are told by [`Inputs::plan_within`] once the plan is read.
    fn reading(&self, what: &str) {
        if let Ok(mut now) = self.0.lock() {
            *now = what.to_string();
        }
    }
}

/// One note per node label on which pod placement cannot be decided from host rows.
fn undecided(uses: &[manifests::ImageUse]) -> Vec<Note> {
    let keys: std::collections::BTreeSet<String> = uses
        .iter()
        .flat_map(|u| u.placement.undecided_keys())
        .collect();
    keys.into_iter().map(Note::UndecidedLabel).collect()
}
