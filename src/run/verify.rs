//! Verifying targets: each fetched through the run's session and judged under the run's
//! [`Settings`], a few at a time.

use super::bounded::run_bounded;
use super::outcome::Outcome;
use super::targets::{Target, sandbox_fetch_hint};
use crate::engine::{Finding, ImageReport, Origin, Rule, sources, verdict_of};
use crate::graph::WalkOptions;
use crate::platform::RuntimeProfile;
use crate::policy::Policy;
use crate::reference::ImageRef;
use crate::session::Session;
use crate::signature::policy::{NodeSignaturePolicy, check_admission, not_from_a_registry};
use crate::signature::{SignatureCheck, judge_signatures, signed_subjects};

/// Settings of a verify run.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The policy (with `--nodes`, the cluster's hosts).
    pub policy: Policy,
    /// Runtime profiles to judge with.
    pub runtimes: Vec<RuntimeProfile>,
    /// Walk options (per image).
    pub walk: WalkOptions,
    /// Images in flight at once.
    pub images_in_flight: usize,
    /// The release check of signatures (`--signatures`, `--key`, the policy's
    /// `signatures.required`), when asked for.
    pub signatures: Option<SignatureCheck>,
    /// The Linux nodes' signature policy, when given: each Linux pull's admission predicted.
    pub admission: Option<NodeSignaturePolicy>,
}

/// Verifies every target, at most `images_in_flight` at once, handing each outcome to `each`
/// in input order as soon as it and those before it are done (see [`run_bounded`]); an error
/// from `each` stops there.
pub async fn verify_all<E>(
    session: &Session,
    targets: &[Target],
    settings: &Settings,
    on_done: &(dyn Fn(&Outcome) + Sync),
    each: &mut dyn FnMut(Outcome) -> Result<(), E>,
) -> Result<(), E> {
    run_bounded(
        targets,
        settings.images_in_flight,
        on_done,
        |t| async move {
            match session.graph(&t.reference, settings.walk).await {
                Ok(graph) => {
                    let mut report = t.judge(&graph, &settings.policy, &settings.runtimes);
                    if may_be_driver_half(t) {
                        report.sources = sources(&graph);
                    }
                    if let Some(check) = &settings.signatures {
                        check_signatures(session, &t.reference, check, &mut report).await;
                    }
                    match (&settings.admission, &t.reference) {
                        (Some(node), ImageRef::Registry(r)) => {
                            check_admission(session, node, r, r, &mut report).await
                        }
                        (Some(_), layout) => not_from_a_registry(&layout.to_string(), &mut report),
                        (None, _) => {}
                    }
                    Outcome::Report(report)
                }
                Err(e) => {
                    let mut outcome = Outcome::fetch_failed(&t.reference, e);
                    if let Outcome::Report(r) = &mut outcome {
                        r.origins = t.origins.clone();
                        sandbox_fetch_hint(r, &t.origins);
                    }
                    outcome
                }
            }
        },
        each,
    )
    .await
}

/// Can `t` be a half of a CSI driver (a DaemonSet's container, a release component)? Only
/// those reports carry the sources the driver check reads: reading them costs allocations
/// every other image is spared.
fn may_be_driver_half(t: &Target) -> bool {
    t.origins.iter().any(|o| match o {
        Origin::Manifest { object, .. } => object.starts_with("DaemonSet "),
        Origin::Release { .. } => true,
        _ => false,
    })
}

/// Adds the `signatures` block and findings of `report` (its index and every entry a host
/// pulls), read from the registry of `reference`; a layout holds no signatures imgcheck reads.
async fn check_signatures(
    session: &Session,
    reference: &ImageRef,
    check: &SignatureCheck,
    report: &mut ImageReport,
) {
    let subjects = signed_subjects(report);
    let ImageRef::Registry(registry) = reference else {
        if !subjects.is_empty() {
            let message = format!(
                "{reference}: signatures are read from registries only (the .sig tags and \
                 referrers of a repository): push the release and check it there"
            );
            report
                .findings
                .push(Finding::new(Rule::FetchError, message, None));
        }
        return finish(report);
    };
    let found = subjects
        .iter()
        .map(|(_, digest)| crate::signature::find(session, registry, digest));
    let found = futures::future::join_all(found).await;
    for ((entry, digest), found) in subjects.iter().zip(&found) {
        let (block, findings) = judge_signatures(entry, digest, found, check);
        report.signatures.push(block);
        report.findings.extend(findings);
    }
    finish(report);
}

/// The findings in severity order, the verdict theirs.
fn finish(report: &mut ImageReport) {
    report.findings.sort_by_key(|f| f.severity);
    report.verdict = verdict_of(&report.findings);
}
