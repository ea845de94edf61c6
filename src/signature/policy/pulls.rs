//! Predicting, for each pull a Linux node makes of an image, what the cluster's signature
//! policy decides: the entry the Linux hosts select, its signatures read from the `.sig` tag
//! of the repository pulled from (only when the scope requires sigstore signatures), judged
//! by [`NodeSignaturePolicy::admit`]. Windows nodes (containerd) enforce no signature policy.

use super::admit::SignedPull;
use super::admit::{Admission, PullDecision};
use super::node::NodeSignaturePolicy;
use crate::digest::Digest;
use crate::engine::{AdmissionEntry, Finding, ImageReport, Rule, admission_finding, verdict_of};
use crate::reference::RegistryRef;
use crate::session::Session;
use crate::signature::fetch::{Found, sigstore_attachments};

/// The manifests the Linux hosts of `report` pull, each with the hosts that pull it.
fn linux_pulls(report: &ImageReport) -> Vec<(Vec<String>, Digest)> {
    let mut pulls: Vec<(Vec<String>, Digest)> = Vec::new();
    for host in report
        .hosts
        .iter()
        .filter(|h| h.platform.starts_with("linux/"))
    {
        let Some(digest) = host.selected.as_deref().and_then(|d| d.parse().ok()) else {
            continue;
        };
        match pulls.iter_mut().find(|(_, d)| *d == digest) {
            Some((hosts, _)) if !hosts.contains(&host.platform) => {
                hosts.push(host.platform.clone())
            }
            Some(_) => {}
            None => pulls.push((vec![host.platform.clone()], digest)),
        }
    }
    pulls
}

/// Adds to `report` the decision for each Linux pull of the image named `logical`, pulled
/// from `physical` (the same repository, or the mirror that serves it).
pub async fn check_admission(
    session: &Session,
    node: &NodeSignaturePolicy,
    logical: &RegistryRef,
    physical: &RegistryRef,
    report: &mut ImageReport,
) {
    // A reference with a tag and a digest is pulled by its digest (containers/image's docker
    // transport takes no reference with both).
    let pinned = logical.digest.as_ref().map(|d| logical.with_digest(d));
    let logical = pinned.as_ref().unwrap_or(logical);
    for (hosts, digest) in linux_pulls(report) {
        let hosts = hosts.join(", ");
        let pull = SignedPull {
            logical,
            instance: &digest,
            physical,
        };
        let found = match node.reads_signatures(logical) {
            true => sigstore_attachments(session, physical, &digest).await,
            false => Found::default(),
        };
        if !found.unavailable.is_empty() {
            let message = format!(
                "{hosts} ({digest}): the signatures in {}/{} could not be read, so the \
                 signature policy's decision is unknown: {}",
                physical.registry,
                physical.repository,
                found.unavailable.join("; ")
            );
            report
                .findings
                .push(Finding::new(Rule::FetchError, message, Some(&digest)));
            continue;
        }
        let admission = node.admit(pull, &found.signatures);
        let entry = entry(&hosts, pull, admission);
        report.findings.extend(admission_finding(&entry));
        report.admissions.push(entry);
    }
    report.findings.sort_by_key(|f| f.severity);
    report.verdict = verdict_of(&report.findings);
}

/// `reference` names no registry (an OCI layout): the signature policy judges pulls from a
/// registry's repository (its scopes, the signatures read there), so for an image Linux hosts
/// pull the check cannot run: a `fetch-error` saying so, never a pass with the policy unapplied.
pub fn not_from_a_registry(reference: &str, report: &mut ImageReport) {
    if linux_pulls(report).is_empty() {
        return;
    }
    let message = format!(
        "{reference}: a signature policy judges pulls from a registry (its scopes, the \
         signatures in the repository pulled from), not an OCI layout: push the release and \
         check it there"
    );
    report
        .findings
        .push(Finding::new(Rule::FetchError, message, None));
    report.findings.sort_by_key(|f| f.severity);
    report.verdict = verdict_of(&report.findings);
}

/// The `admissions` entry of one pull.
fn entry(hosts: &str, pull: SignedPull<'_>, admission: Admission) -> AdmissionEntry {
    let (decision, requirement, reason) = match admission.decision {
        PullDecision::Admitted => ("admitted", None, None),
        PullDecision::Rejected(r, why) => ("rejected", Some(r), Some(why)),
        PullDecision::NotPredicted(r, why) => ("not-predicted", Some(r), Some(why)),
    };
    AdmissionEntry {
        nodes: "linux",
        hosts: hosts.to_string(),
        reference: pull.logical.to_string(),
        digest: pull.instance.to_string(),
        scope: admission.scope,
        looked_in: format!("{}/{}", pull.physical.registry, pull.physical.repository),
        decision,
        requirement,
        reason,
    }
}
