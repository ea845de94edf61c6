//! What a run is asked to verify, as plain data ([`Inputs`]), and reading the local part of
//! it: the policy and the nodes, reference lists and ImageSets, pod templates ([`Inputs::plan`]).

use std::path::PathBuf;

use super::error::RunError;
use super::gather::{Connection, Plan, ReleasePlan, Verified};
use super::progress::{Note, Progress};
use super::targets::from_manifests;
use super::verify::Settings;
use crate::cluster::{manifests, nodes};
use crate::graph::WalkOptions;
use crate::input::{DEFAULT_MAX_INPUT_BYTES, read_imageset, read_reference_list};
use crate::platform::RuntimeProfile;
use crate::policy::{DEFAULT_POLICY, Policy};
use crate::reference::ImageRef;

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
    /// Embedded policy name or policy file.
    pub policy: String,
    /// Runtime profiles to judge with; empty: the policy's.
    pub runtimes: Vec<RuntimeProfile>,
    /// Also read Windows layers (`--deep`).
    pub deep: bool,
    /// Registry requests, and images, in flight at once.
    pub jobs: usize,
    /// The size limit of each input file read (`--max-input-size`): node lists, reference
    /// lists, ImageSets, pod templates (each file of a directory).
    pub max_input_bytes: u64,
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
            policy: DEFAULT_POLICY.to_string(),
            runtimes: Vec::new(),
            deep: false,
            jobs: 16,
            max_input_bytes: DEFAULT_MAX_INPUT_BYTES,
        }
    }
}

impl Inputs {
    /// Reads the inputs, gathers their images through one session and verifies them:
    /// [`Inputs::plan`], then [`Plan::verify`].
    pub async fn verify(
        &self,
        connection: Connection,
        progress: &dyn Progress,
    ) -> Result<Verified, RunError> {
        self.plan(progress)?.verify(connection, progress).await
    }

    /// Reads the local inputs, in this order: the policy and the nodes, the references and
    /// their lists, the pod templates, the release's components. Notes are told to
    /// `progress` as they arise. Nothing is fetched yet.
    pub fn plan(&self, progress: &dyn Progress) -> Result<Plan, RunError> {
        self.one_stdin()?;
        let mut notes = Vec::new();
        let mut note = |n: Note| {
            progress.note(&n);
            notes.push(n);
        };
        let policy = self.policy(&mut note)?;
        let runtimes = match self.runtimes.is_empty() {
            true => policy.runtimes.clone(),
            false => self.runtimes.clone(),
        };
        let listed = self.listed(&mut note)?;
        // Local input first: a bad manifest is bad input even when the release cannot be read.
        let from_manifests = match &self.manifests {
            Some(path) => {
                let uses = manifests::read_manifests(path, self.max_input_bytes)?;
                undecided(&uses).into_iter().for_each(&mut note);
                from_manifests(&uses, &policy)
            }
            None => Vec::new(),
        };
        let release = self.release_plan(&policy)?;
        if release.is_none() && listed.is_empty() && from_manifests.is_empty() {
            return Err(RunError::NoReferences);
        }
        let walk = WalkOptions {
            jobs: self.jobs,
            deep: self.deep,
            deep_linux: self.deep && policy.deep_linux(),
        };
        Ok(Plan {
            settings: Settings {
                policy,
                runtimes,
                walk,
                images_in_flight: self.jobs,
            },
            notes,
            listed,
            release,
            from_manifests,
        })
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

    /// The policy, with the hosts of the node list in place of its own.
    fn policy(&self, note: &mut impl FnMut(Note)) -> Result<Policy, RunError> {
        let policy = Policy::load(&self.policy)?;
        Ok(match &self.nodes {
            Some(path) => {
                let read = nodes::read_nodes(path, self.max_input_bytes)?;
                read.notes.into_iter().map(Note::NodeRuntime).for_each(note);
                policy.with_hosts(read.hosts)
            }
            None => policy,
        })
    }

    /// The references typed, then those of the lists, then those of the ImageSets.
    fn listed(&self, note: &mut impl FnMut(Note)) -> Result<Vec<ImageRef>, RunError> {
        let mut refs = self
            .references
            .iter()
            .map(|s| s.parse::<ImageRef>())
            .collect::<Result<Vec<_>, _>>()?;
        for f in &self.from_files {
            refs.extend(read_reference_list(f, self.max_input_bytes)?);
        }
        for f in &self.imagesets {
            let set = read_imageset(f, self.max_input_bytes)?;
            set.warnings
                .into_iter()
                .map(Note::ImagesetUnread)
                .for_each(&mut *note);
            refs.extend(set.images);
        }
        Ok(refs)
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

/// One note per node label on which pod placement cannot be decided from host rows.
fn undecided(uses: &[manifests::ImageUse]) -> Vec<Note> {
    let keys: std::collections::BTreeSet<String> = uses
        .iter()
        .flat_map(|u| u.placement.undecided_keys())
        .collect();
    keys.into_iter().map(Note::UndecidedLabel).collect()
}
