//! The mirror gate: does the mirror a node would pull from hold the source image exactly?
//!
//! For each source reference: resolve it under the mirror configuration ([`targets`]),
//! gather the evidence ([`gather`]: the source graph, what each mirror holds, the layer
//! blobs) and judge it ([`judge`], pure). With `--pre`, the source is judged before
//! mirroring instead ([`pre_check`], and what oc-mirror will copy of an ImageSetConfiguration
//! entry: [`judge_copy`]). [`check_all`] runs the references a few at a time.

use super::config::MirrorConfig;
use super::gather::gather;
use super::hosts::model::HostsConfig;
use super::judge::{judge, pre_check};
use super::ocmirror::judge_copy;
use super::pull::{self, NodeOs, NodePlan};
use super::resolve::{ResolveError, resolve};
use crate::engine::{ImageReport, Origin};
use crate::graph::WalkOptions;
use crate::policy::Policy;
use crate::reference::{ImageRef, RegistryRef};
use crate::run::{Outcome, Scope, run_bounded};
use crate::session::Session;
use crate::source::FetchError;

/// Checks one source reference against the mirrors nodes of one OS try. `Err` only for bad
/// input ([`crate::error::Fault::Input`]); a source or mirror that cannot be reached gives an
/// `error` verdict.
pub async fn check(
    session: &Session,
    node_plan: &NodePlan,
    policy: &Policy,
    options: WalkOptions,
) -> Result<ImageReport, FetchError> {
    let evidence = gather(session, node_plan, options).await?;
    Ok(judge(&evidence, policy))
}

/// One source reference to check for the nodes of one OS, with their pull plan.
#[derive(Debug, Clone)]
pub struct Target {
    /// The source reference.
    pub reference: ImageRef,
    /// Where the run found it (release component, pod template), then the nodes the row is
    /// for, for the report.
    pub origins: Vec<Origin>,
    /// The hosts its pods can land on, as a narrower policy (`--from-manifests`), if any.
    pub scope: Option<Scope>,
    /// How the nodes pull it (`None`: no mirror configuration).
    pub plan: Option<NodePlan>,
}

/// The mirror configuration as each OS reads it, and the OSes in scope.
#[derive(Debug, Clone, Copy)]
pub struct Mirrors<'a> {
    /// IDMS, ITMS, ICSP and registries.conf, as read (Linux nodes: registries.conf).
    pub config: &'a MirrorConfig,
    /// The hosts.toml tree of Windows nodes (WMCO's rendering, or `--hosts-dir`).
    pub windows: &'a HostsConfig,
    /// The node OSes in scope.
    pub oses: &'a [NodeOs],
}

impl Mirrors<'_> {
    /// How nodes of `os` pull `reference`.
    pub fn node_plan(&self, reference: &RegistryRef, os: NodeOs) -> Result<NodePlan, ResolveError> {
        let resolution = resolve(self.config, reference)?;
        Ok(match os {
            NodeOs::Linux => pull::linux(reference, resolution.as_ref()),
            NodeOs::Windows => {
                let linux = resolution
                    .map(|r| r.mirrors_for(true).into_iter().cloned().collect())
                    .unwrap_or_default();
                pull::windows(reference, self.windows, self.config.mirror_sets(), linux)
            }
        })
    }
}

/// The report origin naming the nodes of `os`.
pub fn nodes_origin(os: NodeOs) -> Origin {
    Origin::Nodes {
        os: os.name().into(),
        runtime: os.runtime().into(),
        configured_by: os.configured_by().into(),
    }
}

/// Settings of a mirror-check run.
#[derive(Debug, Clone)]
pub struct MirrorRun {
    /// The policy (supported Windows builds; with `pre`, the whole verify policy).
    pub policy: Policy,
    /// A mirror configuration was given (plan findings apply).
    pub configured: bool,
    /// Check the sources before mirroring instead of the mirrors.
    pub pre: bool,
    /// Walk options (per image).
    pub walk: WalkOptions,
    /// Images in flight at once.
    pub images_in_flight: usize,
}

/// Why the references cannot be checked under the mirror configuration (bad input).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TargetError {
    /// A mirror of the entry covering a reference rewrites it into no image reference.
    #[error(transparent)]
    Resolve(#[from] ResolveError),
    /// An OCI layout was given with a mirror configuration.
    #[error(
        "{0}: mirror-check needs registry references (an OCI layout is not mirrored by the cluster)"
    )]
    Layout(ImageRef),
}

/// One target per image and node OS in scope under `mirrors` (one per image without a
/// configuration); refuses OCI layouts when a configuration is given (the cluster mirrors
/// registry references only).
pub fn targets(
    mirrors: Option<Mirrors<'_>>,
    images: &[crate::run::Target],
) -> Result<Vec<Target>, TargetError> {
    let mut out = Vec::new();
    for image in images {
        let r = &image.reference;
        let target = |plan: Option<NodePlan>| {
            let mut origins = image.origins.clone();
            origins.extend(plan.as_ref().map(|p| nodes_origin(p.os)));
            Target {
                reference: r.clone(),
                origins,
                scope: image.scope.as_deref().cloned(),
                plan,
            }
        };
        match (r, mirrors) {
            (ImageRef::Registry(reg), Some(m)) => {
                for os in m.oses {
                    out.push(target(Some(m.node_plan(reg, *os)?)));
                }
            }
            (ImageRef::Layout(_), Some(_)) => return Err(TargetError::Layout(r.clone())),
            (_, None) => out.push(target(None)),
        }
    }
    Ok(out)
}

/// Checks every target, at most `images_in_flight` at once, calling `on_done` as each
/// finishes and handing each outcome to `each` in input order as soon as its turn comes (an
/// error from `each` stops there). Without `pre`, each mirror is checked ([`check`]); with
/// `pre`, each source is judged ([`pre_check`]).
pub async fn check_all<E>(
    session: &Session,
    targets: &[Target],
    run: &MirrorRun,
    on_done: &(dyn Fn(&Outcome) + Sync),
    each: &mut dyn FnMut(Outcome) -> Result<(), E>,
) -> Result<(), E> {
    run_bounded(
        targets,
        run.images_in_flight,
        on_done,
        |t| async move {
            let policy = t.scope.as_ref().map_or(&run.policy, |s| &s.policy);
            let mut outcome = match (&t.plan, run.pre) {
                (Some(p), false) => match check(session, p, policy, run.walk).await {
                    Ok(r) => Outcome::Report(r),
                    Err(e) => Outcome::BadInput(e.into()),
                },
                (_, _) => check_before_mirroring(session, t, policy, run).await,
            };
            if let Outcome::Report(r) = &mut outcome {
                r.origins = t.origins.clone();
                if let Some(scope) = &t.scope {
                    scope.note_on(r);
                }
            }
            outcome
        },
        each,
    )
    .await
}

/// `--pre` (and layouts without a configuration): the source judged as `verify` does, plus
/// the pull plan when a configuration is given.
async fn check_before_mirroring(
    session: &Session,
    t: &Target,
    policy: &Policy,
    run: &MirrorRun,
) -> Outcome {
    let r = &t.reference;
    match session.graph(r, run.walk).await {
        Ok(g) => {
            let p = t.plan.as_ref().map(|p| &p.plan);
            let mut report = pre_check(&g, policy, &policy.runtimes, p);
            judge_copy(&mut report, &g, r, policy, &t.origins);
            Outcome::Report(report)
        }
        Err(e) => Outcome::fetch_failed(r, e),
    }
}

crate::error::input_errors!(TargetError);
