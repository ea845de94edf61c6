//! The mirror gate's run (`mirror-check`), for any Rust caller: the run's images
//! ([`Inputs`]), the cluster's mirror configuration ([`MirrorFiles`]) and the node OSes
//! become, per image, the pull plan of each OS that pulls it, checked through the run's one
//! session ([`crate::mirror::check`]) into one report per image, handed to a [`ReportSink`] in
//! input order. The command line parses flags and prints; [`GateInputs::plans`] are the
//! pull plans alone (`--plan`, no network).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::error::RunError;
use super::gather::{Connection, Finished, RunPlan};
use super::inputs::read_within;
use super::outcome::Outcome;
use super::progress::Progress;
use super::sink::ReportSink;
use super::targets::{Target, sandbox_fetch_hint};
use super::{Inputs, run_bounded};
use crate::mirror::check::{
    Gate, GateImage, ImageSetImages, Mirrors, TargetError, check_image, nodes_origin, plans,
};
use crate::mirror::config::MirrorConfig;
use crate::mirror::hosts::model::HostsConfig;
use crate::mirror::hosts::{dir, wmco};
use crate::mirror::pull::{NodeOs, NodePlan, oses_in_scope};
use crate::platform::RuntimeProfile;
use crate::policy::Policy;
use crate::reference::ImageRef;

/// The cluster's mirror configuration, as files (several of each may be given).
#[derive(Debug, Clone, Default)]
pub struct MirrorFiles {
    /// ImageDigestMirrorSet / ImageTagMirrorSet YAML (`--idms`).
    pub idms: Vec<PathBuf>,
    /// ImageContentSourcePolicy YAML (`--icsp`).
    pub icsp: Vec<PathBuf>,
    /// registries.conf v2, with its `FILE.d/*.conf` drop-ins (`--registries-conf`).
    pub registries_conf: Vec<PathBuf>,
    /// containerd's `config_path` tree for Windows nodes instead of WMCO's rendering of the
    /// mirror sets (`--hosts-dir`).
    pub hosts_dir: Option<PathBuf>,
}

impl MirrorFiles {
    /// Reads the configuration, telling `progress` what it reads: the mirror sets and
    /// registries.conf files as Linux nodes merge them, and the hosts.toml tree of Windows
    /// nodes (the `--hosts-dir` one, else WMCO's rendering of the mirror sets).
    fn read(&self, progress: &dyn Progress) -> Result<(MirrorConfig, HostsConfig), RunError> {
        let files = (self
            .registries_conf
            .iter()
            .map(|f| ("--registries-conf", f)))
        .chain(self.idms.iter().map(|f| ("--idms", f)))
        .chain(self.icsp.iter().map(|f| ("--icsp", f)));
        let names: Vec<String> = files
            .map(|(flag, f)| format!("{flag} {}", f.display()))
            .collect();
        if !names.is_empty() {
            progress.reading(&format!("reading {}", names.join(", ")));
        }
        let config = crate::mirror::load(&self.registries_conf, &self.idms, &self.icsp)?;
        let windows = match &self.hosts_dir {
            Some(d) => {
                progress.reading(&format!("reading --hosts-dir {}", d.display()));
                dir::read(d)?
            }
            None => wmco::render(config.mirror_sets())?,
        };
        Ok((config, windows))
    }

    /// Was any configuration given?
    pub fn is_empty(&self) -> bool {
        self.idms.is_empty()
            && self.icsp.is_empty()
            && self.registries_conf.is_empty()
            && self.hosts_dir.is_none()
    }
}

/// What the mirror gate is asked to check: the images (with the policy, nodes and jobs of
/// [`Inputs`]) and how the cluster pulls them.
#[derive(Debug, Clone, Default)]
pub struct GateInputs {
    /// The images, the policy and the nodes.
    pub inputs: Inputs,
    /// The cluster's mirror configuration.
    pub mirrors: MirrorFiles,
    /// The node OSes to check for (`--os`); empty: those of the nodes, else Linux and, when
    /// the policy has Windows hosts, Windows.
    pub oses: Vec<NodeOs>,
    /// Before mirroring: judge the sources, and what the configuration (and the ImageSets)
    /// will cover.
    pub pre: bool,
    /// The gate runs where the sources cannot be reached (inside the disconnected network):
    /// the mirrors of a pinned reference are checked against its digest without asking its
    /// source.
    pub disconnected: bool,
}

/// The local part of a gate run, read (made by [`GateInputs::plan_within`]): nothing fetched.
pub struct GatePlan {
    plan: RunPlan,
    pulls: Pulls,
    gate: Gate,
}

/// How the cluster's nodes pull: the mirror configuration as each OS reads it, and the OSes.
struct Pulls {
    config: MirrorConfig,
    windows: HostsConfig,
    oses: Vec<NodeOs>,
    /// The Windows nodes' runtime profiles.
    runtimes: Vec<RuntimeProfile>,
    /// A configuration was given.
    configured: bool,
}

impl GateInputs {
    /// Reads the local inputs ([`Inputs::plan_within`]: the Windows nodes' sandbox image is
    /// one of the images whenever the policy has Windows hosts) and the mirror configuration.
    /// Without a configuration, only `pre` (a plain verify of the sources) can run.
    pub fn plan_within(
        &self,
        deadline: Option<(Instant, Duration)>,
        progress: &dyn Progress,
    ) -> Result<GatePlan, RunError> {
        let configured = !self.mirrors.is_empty();
        if !configured && !self.pre {
            return Err(RunError::NoMirrorConfig);
        }
        let inputs = Inputs {
            cluster_wide: true,
            ..self.inputs.clone()
        };
        let files = self.mirrors.clone();
        // The mirror configuration is read within --timeout too (a FIFO that never ends).
        let (plan, config, windows) = read_within(deadline, progress, move |p| {
            let plan = inputs.plan(p)?;
            let (config, windows) = files.read(p)?;
            Ok((plan, config, windows))
        })?;
        if deadline.is_some() {
            plan.notes.iter().for_each(|n| progress.note(n));
        }
        let oses = oses_in_scope(&self.oses, &plan.settings.policy);
        let imageset = (self.pre && !self.inputs.imagesets.is_empty()).then(|| ImageSetImages {
            files: self.inputs.imagesets.clone(),
            images: plan.imageset_images(),
        });
        let gate = Gate {
            runtimes: plan.settings.runtimes.clone(),
            pre: self.pre,
            disconnected: self.disconnected,
            signatures: plan.settings.signatures.is_some(),
            walk: plan.settings.walk,
            admission: plan.settings.admission.clone(),
            imageset,
        };
        Ok(GatePlan {
            plan,
            pulls: Pulls {
                config,
                windows,
                oses,
                runtimes: gate.runtimes.clone(),
                configured,
            },
            gate,
        })
    }

    /// Reads the inputs ([`GateInputs::plan_within`], within the connection's `--timeout`),
    /// then checks every image ([`GatePlan::check_into`]).
    pub async fn check_into(
        &self,
        mut connection: Connection,
        progress: &dyn Progress,
        sink: &mut dyn ReportSink,
    ) -> Result<Finished, RunError> {
        let options = &mut connection.options;
        let started = *options.clock_start.get_or_insert_with(Instant::now);
        let deadline = options.deadline.map(|d| (started + d, d));
        let plan = self.plan_within(deadline, progress)?;
        plan.check_into(connection, progress, sink).await
    }
}

impl Pulls {
    /// The configuration as each OS reads it (`None`: none was given).
    fn mirrors(&self) -> Option<Mirrors<'_>> {
        self.configured.then_some(Mirrors {
            config: &self.config,
            windows: &self.windows,
            oses: &self.oses,
            windows_runtimes: &self.runtimes,
        })
    }

    /// The node OSes that pull `target`'s image: those in scope whose hosts its pods can land
    /// on (all in scope when it has no scope, or its scope no host).
    fn oses_of(&self, target: &Target) -> Vec<NodeOs> {
        let Some(scope) = &target.scope else {
            return self.oses.clone();
        };
        let hosts = scope.policy.hosts();
        let pulls = |os: &NodeOs| {
            let windows = *os == NodeOs::Windows;
            hosts.iter().any(|h| h.platform.is_windows() == windows)
        };
        match hosts.is_empty() {
            true => self.oses.clone(),
            false => self.oses.iter().copied().filter(pulls).collect(),
        }
    }

    /// Is `target` pulled by a node OS in scope? (The Windows pause image is not, when only
    /// Linux nodes are checked.)
    fn in_scope(&self, target: &Target) -> bool {
        !self.oses_of(target).is_empty()
    }

    /// The pull plan of `target` for each OS that pulls it (none without a configuration).
    fn plans_of(&self, target: &Target) -> Result<Vec<NodePlan>, TargetError> {
        plans(self.mirrors(), &target.reference, &self.oses_of(target))
    }
}

impl GatePlan {
    /// The notes about the inputs, one line each (for a report that stops early).
    pub fn notes(&self) -> Vec<String> {
        self.plan.notes.iter().map(ToString::to_string).collect()
    }

    /// The pull plans of the local images (typed, listed, templated, the sandbox image), for
    /// each OS that pulls each, without any network (`--plan`). Needs a configuration.
    pub fn plans(&self) -> Result<Vec<NodePlan>, RunError> {
        if !self.pulls.configured {
            return Err(RunError::NoMirrorConfig);
        }
        let mut out = Vec::new();
        for t in self.plan.local_targets().filter(|t| self.pulls.in_scope(t)) {
            out.extend(self.pulls.plans_of(t)?);
        }
        Ok(out)
    }

    /// Gathers every image (the release's components join the local ones) through one
    /// session made from `connection`, and checks each, at most `--jobs` at once, handing
    /// each report to `sink` in input order as soon as its turn comes.
    pub async fn check_into(
        self,
        connection: Connection,
        progress: &dyn Progress,
        sink: &mut dyn ReportSink,
    ) -> Result<Finished, RunError> {
        let GatePlan { plan, pulls, gate } = self;
        let policy = plan.settings.policy.clone();
        let jobs = plan.settings.images_in_flight;
        let mut gathered = plan.gather(connection).await?;
        gathered.targets.retain(|t| pulls.in_scope(t));
        let mut checks = Vec::with_capacity(gathered.targets.len());
        for t in &gathered.targets {
            checks.push((t.clone(), pulls.plans_of(t)?));
        }
        // The mirrors join the references the session expects (token scopes are batched).
        let mut refs = gathered.references();
        for (_, plans) in &checks {
            let places = plans
                .iter()
                .flat_map(|p| p.plan.mirrors.iter().chain(&p.elsewhere));
            refs.extend(places.map(|m| ImageRef::Registry(m.repository.clone())));
        }
        let mut delivery = gathered.delivery(sink);
        let session = gathered.session(&refs);
        progress.start(checks.len());
        let done = |o: &Outcome| progress.done(o);
        let (policy, gate) = (&policy, &gate);
        let check = |c| check_target(session, c, policy, gate);
        let mut each = |o| delivery.outcome(o);
        run_bounded(&checks, jobs, &done, check, &mut each).await?;
        gathered.finish(delivery)
    }
}

/// Checks one target under its plans: against its scope's policy, else the run's; its
/// origins and the nodes of each row's OS on the report.
async fn check_target(
    session: &crate::session::Session,
    (target, plans): &(Target, Vec<NodePlan>),
    policy: &Policy,
    gate: &Gate,
) -> Outcome {
    let scope = target.scope.as_deref();
    let image = GateImage {
        reference: &target.reference,
        origins: &target.origins,
        plans,
        policy: scope.map_or(policy, |s| &s.policy),
    };
    match check_image(session, image, gate).await {
        Ok(mut report) => {
            sandbox_fetch_hint(&mut report, &target.origins);
            report.origins = target.origins.clone();
            (report.origins).extend(plans.iter().map(|p| nodes_origin(p.os)));
            if let Some(scope) = scope {
                scope.note_on(&mut report);
            }
            Outcome::Report(report)
        }
        Err(e) => Outcome::BadInput(e.into()),
    }
}
