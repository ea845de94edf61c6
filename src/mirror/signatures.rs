//! Signatures that did not travel with an image (`mirror-signature-missing`, issue 35).
//!
//! A Linux node (CRI-O, containers/image) reads an image's sigstore signatures from the
//! repository it pulls the image from — the mirror, in a disconnected cluster
//! (containers/image `docker/docker_image_src.go` `GetSignaturesWithFormat`, on the mirror's
//! physical reference) — so a signature left at the source fails every pull a signature policy
//! guards. Windows nodes (containerd) enforce no signature policy: only the Linux nodes' row is
//! checked, for the index and each entry a Linux host pulls ([`signed_subjects`]).
//!
//! A signature travelled when the mirror holds one with the same payload and the same
//! `dev.cosignproject.cosign/signature` annotation (an attestation: the same DSSE envelope),
//! under the `.sig`/`.att` tags or OCI referrers, whatever the manifest holding it:
//! containers/image rewrites the `.sig` manifest in the destination (`docker/docker_image_dest.go`
//! `putSignaturesToSigstoreAttachments`: the payload blobs and annotations kept, a new config),
//! so its digest differs from the source's while every signature is intact.
//!
//! The reading is [`travelled`] (I/O through [`crate::signature::find`], under its caps); the
//! judging is [`compare`] (pure).

use super::gather::{Evidence, Held, SourceEvidence};
use super::pull::NodeOs;
use crate::digest::Digest;
use crate::engine::{Finding, ImageReport, Rule, Severity, verdict_of};
use crate::reference::RegistryRef;
use crate::session::Session;
use crate::signature::payload::claim;
use crate::signature::signed_subjects;
use crate::signature::{Found, find};

/// What was read for one manifest the nodes pull.
#[derive(Debug, Clone, Copy)]
pub struct Subject<'a> {
    /// How the report names it: `index`, `image`, or the hosts that pull it (`linux/amd64`).
    pub entry: &'a str,
    /// Its digest.
    pub digest: &'a Digest,
    /// What the source holds for it (`None`: the source was not asked, `--disconnected`, or
    /// could not be reached).
    pub source: Option<&'a Found>,
    /// What the mirror the nodes pull from holds for it.
    pub mirror: &'a Found,
}

/// The findings of one subject: its signatures', then its attestations'.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Compared {
    /// Signatures that did not travel (or could not be compared).
    pub signatures: Vec<Finding>,
    /// Attestations that did not travel.
    pub attestations: Vec<Finding>,
}

/// Adds to `report`, the judged row of `evidence`, the signatures and attestations the source
/// holds for the index and each entry its hosts pull that the mirror they pull from lacks —
/// Linux nodes' rows only, when a mirror holds the image. `required` (the policy's
/// `signatures.required`, or `--signatures`): a signature none of which travelled is an error,
/// and when the source was not asked the mirror must hold a signature of its own.
pub async fn travelled(
    session: &Session,
    evidence: &Evidence,
    report: &mut ImageReport,
    required: bool,
) {
    if evidence.os != NodeOs::Linux {
        return;
    }
    let held = evidence
        .mirrors
        .iter()
        .find(|l| matches!(l.held, Held::Same { .. }));
    let Some(mirror) = held.map(|l| &l.target) else {
        return;
    };
    let source = match &evidence.source {
        SourceEvidence::Fetched(_) => Some(&evidence.reference),
        SourceEvidence::Pinned { .. } if required => None,
        SourceEvidence::Pinned { .. } | SourceEvidence::Unavailable(_) => return,
    };
    let subjects = signed_subjects(report);
    let read = (subjects.iter()).map(|(_, digest)| read(session, source, mirror, digest));
    let read = futures::future::join_all(read).await;
    let repository = format!("{}/{}", mirror.registry, mirror.repository);
    let mut found = Compared::default();
    for ((entry, digest), (source, mirror)) in subjects.iter().zip(&read) {
        let Some(mirror) = mirror else { continue };
        let subject = Subject {
            entry,
            digest,
            source: source.as_ref(),
            mirror,
        };
        let compared = compare(subject, &repository, required);
        found.signatures.extend(compared.signatures);
        found.attestations.extend(compared.attestations);
    }
    report.findings.extend(found.signatures);
    report.findings.extend(found.attestations);
    report.findings.sort_by_key(|f| f.severity);
    report.verdict = report.verdict.max(verdict_of(&report.findings));
}

/// What the source (when asked) and the mirror hold for `digest`; the mirror is not asked
/// when the source holds nothing (`None`).
async fn read(
    session: &Session,
    source: Option<&RegistryRef>,
    mirror: &RegistryRef,
    digest: &Digest,
) -> (Option<Found>, Option<Found>) {
    let source = match source {
        Some(reference) => Some(find(session, reference, digest).await),
        None => None,
    };
    let nothing = |f: &Found| {
        f.signatures.is_empty() && f.attestations.is_empty() && f.unavailable.is_empty()
    };
    if source.as_ref().is_some_and(nothing) {
        return (source, None);
    }
    (source, Some(find(session, mirror, digest).await))
}

/// The findings of one subject in the mirror `repository` (pure).
///
/// - Source asked: each of its signatures the mirror does not hold as is is missing; none of
///   them there is an error when `required`, else (or when some travelled) a warning. Its
///   attestations likewise, always a warning: no node reads them.
/// - Source not asked: nothing to compare; when `required`, the mirror must hold a signature
///   whose payload names the digest (an error otherwise).
/// - A lookup that could not be completed: `fetch-error` when `required`, else nothing (a
///   warning at most was at stake).
pub fn compare(subject: Subject<'_>, repository: &str, required: bool) -> Compared {
    let Subject {
        entry,
        digest,
        source,
        mirror,
    } = subject;
    let name = format!("{entry} ({digest})");
    let mut compared = Compared::default();
    let unavailable: Vec<&String> = (source.iter().flat_map(|s| &s.unavailable))
        .chain(&mirror.unavailable)
        .collect();
    if !unavailable.is_empty() {
        if required {
            let message = format!(
                "{name}: whether its signatures are in the mirror {repository} could not be \
                 checked: {}",
                unavailable
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join("; ")
            );
            let f = Finding::new(Rule::FetchError, message, Some(digest));
            compared.signatures.push(f);
        }
        return compared;
    }
    let Some(source) = source else {
        let signed = (mirror.signatures.iter().flatten())
            .any(|s| claim(&s.payload).is_ok_and(|c| c.digest == digest.to_string()));
        if required && !signed {
            let message = format!(
                "{name}: the mirror {repository} holds no cosign signature of it, and the \
                 source was not asked (--disconnected, or out of reach), so what did not travel \
                 is unknown: {}",
                consequence(entry)
            );
            let mut f = Finding::new(Rule::MirrorSignatureMissing, message, Some(digest));
            f.severity = Severity::Error;
            compared.signatures.push(f);
        }
        return compared;
    };
    let signatures = left_behind(&source.signatures, &mirror.signatures);
    if let Some((missing, of)) = signatures {
        let message = format!(
            "{name}: {}: {}",
            count(missing, of, "cosign signatures", repository),
            consequence(entry)
        );
        let mut f = Finding::new(Rule::MirrorSignatureMissing, message, Some(digest));
        if required && missing == of {
            f.severity = Severity::Error;
        }
        compared.signatures.push(f);
    }
    if let Some((missing, of)) = left_behind(&source.attestations, &mirror.attestations) {
        let message = format!(
            "{name}: {}: no node reads them \
             (CRI-O checks signatures, never attestations), but a release check of the mirror \
             (verify --signatures, Conforma) finds none; containers/image (skopeo, oc-mirror v2) \
             copies signatures only",
            count(missing, of, "in-toto attestations", repository)
        );
        let f = Finding::new(Rule::MirrorSignatureMissing, message, Some(digest));
        compared.attestations.push(f);
    }
    compared
}

/// Of the items the source holds (read), how many the mirror does not hold as they are, and
/// of how many; `None` when every one is there (or the source holds none).
fn left_behind<T: PartialEq>(
    source: &[Result<T, String>],
    mirror: &[Result<T, String>],
) -> Option<(usize, usize)> {
    let held: Vec<&T> = source.iter().flatten().collect();
    let there: Vec<&T> = mirror.iter().flatten().collect();
    let missing = held.iter().filter(|s| !there.contains(s)).count();
    (missing > 0).then_some((missing, held.len()))
}

/// "none of the source's 2 {what} is in the mirror {repository}", "1 of the source's 2 {what}
/// is not in …".
fn count(missing: usize, of: usize, what: &str, repository: &str) -> String {
    let verb = if missing == 1 { "is" } else { "are" };
    match missing == of {
        true => format!("none of the source's {of} {what} is in the mirror {repository}"),
        false => {
            format!("{missing} of the source's {of} {what} {verb} not in the mirror {repository}")
        }
    }
}

/// What a signature missing from the mirror does to the pulls of `entry`.
fn consequence(entry: &str) -> &'static str {
    match entry {
        "index" => {
            "CRI-O checks the signature of the entry it selects, not the index's (containers/image \
             copy.Image), but a release check of the mirror (verify --signatures) and any copy \
             made from it lack it"
        }
        _ => {
            "Linux nodes (CRI-O) read an image's signatures from the repository they pull it \
             from, so under a signature policy that requires them (policy.json sigstoreSigned, \
             rendered from a ClusterImagePolicy) every pull of it fails there; Windows nodes \
             (containerd) check none"
        }
    }
}

#[cfg(test)]
mod tests;
