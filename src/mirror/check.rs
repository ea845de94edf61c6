//! The mirror gate: does the mirror a node would pull from hold the source image exactly?
//!
//! For each source reference: resolve it under the mirror configuration ([`targets`]),
//! gather the evidence ([`gather`]: the source graph, what each mirror holds, the layer
//! blobs) and judge it ([`judge`], pure). With `--pre`, the source is judged before
//! mirroring instead ([`pre_check`], and what oc-mirror will copy of an ImageSetConfiguration
//! entry: [`judge_copy`]). [`check_all`] runs the references a few at a time.

use super::config::MirrorConfig;
use super::gather::gather;
use super::judge::{judge, pre_check};
use super::ocmirror::judge_copy;
use super::plan::plan;
use super::resolve::{Resolution, ResolveError, resolve};
use crate::engine::{ImageReport, Origin};
use crate::graph::WalkOptions;
use crate::policy::Policy;
use crate::reference::{ImageRef, RegistryRef};
use crate::run::{Outcome, Scope, run_bounded};
use crate::session::Session;
use crate::source::FetchError;

/// Checks one source reference against its mirrors. `Err` only for bad input ([`crate::error::Fault::Input`]); a
/// source or mirror that cannot be reached gives an `error` verdict.
pub async fn check(
    session: &Session,
    reference: &RegistryRef,
    resolution: Option<&Resolution>,
    policy: &Policy,
    options: WalkOptions,
) -> Result<ImageReport, FetchError> {
    let evidence = gather(session, reference, resolution, options).await?;
    Ok(judge(&evidence, policy))
}

/// One source reference to check, with its resolution under the mirror configuration.
#[derive(Debug, Clone)]
pub struct Target {
    /// The source reference.
    pub reference: ImageRef,
    /// Where the run found it (release component, pod template), for the report.
    pub origins: Vec<Origin>,
    /// The hosts its pods can land on, as a narrower policy (`--from-manifests`), if any.
    pub scope: Option<Scope>,
    /// Where a node pulls it from (`None`: no entry covers it, or no configuration).
    pub resolution: Option<Resolution>,
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

/// Resolves every image under `config`; refuses OCI layouts when a configuration is
/// given (the cluster mirrors registry references only).
pub fn targets(
    config: &MirrorConfig,
    configured: bool,
    images: &[crate::run::Target],
) -> Result<Vec<Target>, TargetError> {
    images
        .iter()
        .map(|image| {
            let r = &image.reference;
            let resolution = match r {
                ImageRef::Registry(reg) if configured => resolve(config, reg)?,
                ImageRef::Layout(_) if configured => return Err(TargetError::Layout(r.clone())),
                _ => None,
            };
            Ok(Target {
                reference: r.clone(),
                origins: image.origins.clone(),
                scope: image.scope.clone(),
                resolution,
            })
        })
        .collect()
}

/// Checks every target, at most `images_in_flight` at once, calling `on_done` as each
/// finishes; results in input order. Without `pre`, each mirror is checked ([`check`]);
/// with `pre`, each source is judged ([`pre_check`]).
pub async fn check_all(
    session: &Session,
    targets: &[Target],
    run: &MirrorRun,
    on_done: &(dyn Fn(&Outcome) + Sync),
) -> Vec<Outcome> {
    run_bounded(targets, run.images_in_flight, on_done, |t| async move {
        let policy = t.scope.as_ref().map_or(&run.policy, |s| &s.policy);
        let mut outcome = match (&t.reference, run.pre) {
            (ImageRef::Registry(reg), false) => {
                match check(session, reg, t.resolution.as_ref(), policy, run.walk).await {
                    Ok(r) => Outcome::Report(r),
                    Err(e) => Outcome::BadInput(e.into()),
                }
            }
            (_, _) => check_before_mirroring(session, t, policy, run).await,
        };
        if let Outcome::Report(r) = &mut outcome {
            r.origins = t.origins.clone();
            if let Some(scope) = &t.scope {
                scope.note_on(r);
            }
        }
        outcome
    })
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
            let p = match r {
                ImageRef::Registry(reg) if run.configured => Some(plan(reg, t.resolution.as_ref())),
                _ => None,
            };
            let mut report = pre_check(&g, policy, &policy.runtimes, p.as_ref());
            judge_copy(&mut report, &g, r, policy, &t.origins);
            Outcome::Report(report)
        }
        Err(e) => Outcome::fetch_failed(r, e),
    }
}

crate::error::input_errors!(TargetError);
