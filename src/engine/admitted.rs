//! The `admissions` block of a report and its findings (`--signature-policy`,
//! `--image-policy`): for each pull a Linux node makes, what the cluster's signature policy
//! decides (containers/image's decision, predicted by `signature::policy`):
//! `signature-rejected` when CRI-O would refuse it, `signature-not-predicted` when a
//! requirement cannot be checked offline. Windows nodes (containerd) enforce no signature
//! policy: their pulls get no entry.

use super::finding::Finding;
use super::rules::Rule;
use super::standing::AdmissionEntry;

/// The finding of a Linux pull the signature policy refuses (`signature-rejected`) or that
/// cannot be predicted (`signature-not-predicted`); none for an admitted one.
pub fn admission_finding(entry: &AdmissionEntry) -> Option<Finding> {
    let (rule, verb) = match entry.decision {
        "rejected" => (Rule::SignatureRejected, "would refuse"),
        "not-predicted" => (Rule::SignatureNotPredicted, "cannot be predicted for"),
        _ => return None,
    };
    let message = format!(
        "Linux nodes (CRI-O) {verb} {} ({}: {}): scope {}, requirement {}, signature looked \
         for in {}: {}",
        entry.reference,
        entry.hosts,
        entry.digest,
        entry.scope,
        entry.requirement.unwrap_or("-"),
        entry.looked_in,
        entry.reason.as_deref().unwrap_or("-"),
    );
    let mut f = Finding::new(rule, message, None);
    f.digest = Some(entry.digest.clone());
    f.host = Some(entry.hosts.clone());
    f.nodes = Some("linux");
    Some(f)
}
