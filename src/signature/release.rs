//! The release check of signatures (`verify --signatures`), pure: which manifests must be
//! signed and attested (the index and every entry a host of the report pulls), and, from
//! what was found next to each ([`Found`]), its `signatures` block and findings
//! (`signature-missing`, `signature-invalid`, `attestation-missing`).
//!
//! As cosign verifies: a manifest is signed when one of its signatures holds a simple-signing
//! payload whose `critical.image.docker-manifest-digest` is the manifest's digest and, with
//! keys, verifies with one of them; attested when one DSSE envelope holds an in-toto statement
//! with the manifest's digest among its subjects and, with keys, a signature one of them
//! verifies. The payload's `docker-reference` is reported, not required to match: a release
//! is signed where it is built and served from elsewhere.

use super::payload::{Envelope, base64, claim};
use super::{Found, PublicKey, Stored};
use crate::digest::Digest;
use crate::engine::{Finding, ImageReport, Rule, SignatureEntry, Standing};

/// What `--signatures` requires.
#[derive(Debug, Clone, Default)]
pub struct SignatureCheck {
    /// Keys one of which must verify each signature (`--key`); none: signatures are read and
    /// their payloads checked, not verified.
    pub keys: Vec<PublicKey>,
    /// Attestations are required too (the policy's `signatures.attestations`, default true).
    pub attestations: bool,
}

/// The manifests that must be signed: the report's own (`index`, or `image` for a single
/// manifest), then each digest a host pulls, named by the hosts that pull it, in host order.
pub fn signed_subjects(report: &ImageReport) -> Vec<(String, Digest)> {
    let mut subjects: Vec<(Vec<String>, Digest)> = Vec::new();
    let Some(top) = report
        .digest
        .as_deref()
        .and_then(|d| d.parse::<Digest>().ok())
    else {
        return vec![];
    };
    let pulls = report.hosts.iter().filter_map(|h| {
        let digest = h.selected.as_deref()?.parse::<Digest>().ok()?;
        Some((h.platform.clone(), digest))
    });
    for (host, digest) in pulls {
        match subjects.iter_mut().find(|(_, d)| *d == digest) {
            Some((hosts, _)) if !hosts.contains(&host) => hosts.push(host),
            Some(_) => {}
            None => subjects.push((vec![host], digest)),
        }
    }
    let top_label = match subjects.iter().position(|(_, d)| *d == top) {
        Some(i) => {
            subjects.remove(i);
            "image"
        }
        None => "index",
    };
    std::iter::once((top_label.to_string(), top))
        .chain(subjects.into_iter().map(|(hosts, d)| (hosts.join(", "), d)))
        .collect()
}

/// The block and findings of one manifest (`entry`, `digest`) from what was `found`.
pub fn judge_signatures(
    entry: &str,
    digest: &Digest,
    found: &Found,
    check: &SignatureCheck,
) -> (SignatureEntry, Vec<Finding>) {
    let mut findings = Vec::new();
    let unavailable = !found.unavailable.is_empty();
    if unavailable {
        let message = format!(
            "{entry} ({digest}): the signatures could not be read: {}",
            found.unavailable.join("; ")
        );
        findings.push(Finding::new(Rule::FetchError, message, Some(digest)));
    }
    let sigs = judge_each(&found.signatures, |s| signature(s, digest, &check.keys));
    let (signed, identity) = standing(&sigs, !check.keys.is_empty(), unavailable);
    let where_ = "looked for the tag {tag}.sig and OCI referrers";
    let tag = format!("{}-{}", digest.algorithm().name(), digest.hex());
    match signed {
        Standing::Missing => findings.push(Finding::new(
            Rule::SignatureMissing,
            format!(
                "{entry} ({digest}) has no cosign signature ({})",
                where_.replace("{tag}", &tag)
            ),
            Some(digest),
        )),
        Standing::Invalid => findings.push(Finding::new(
            Rule::SignatureInvalid,
            format!(
                "{entry} ({digest}): {} signatures, none valid: {}",
                sigs.len(),
                reasons(&sigs)
            ),
            Some(digest),
        )),
        _ => {}
    }
    let atts = judge_each(&found.attestations, |a| attestation(a, digest, &check.keys));
    let attested = match check.attestations {
        true => standing(&atts, !check.keys.is_empty(), unavailable).0,
        false => Standing::NotRequired,
    };
    if matches!(attested, Standing::Missing | Standing::Invalid) {
        let message = match attested {
            Standing::Missing => format!(
                "{entry} ({digest}) has no in-toto attestation (looked for the tag {tag}.att and OCI referrers)"
            ),
            _ => format!(
                "{entry} ({digest}): {} attestations, none about it and valid: {}",
                atts.len(),
                reasons(&atts)
            ),
        };
        findings.push(Finding::new(
            Rule::AttestationMissing,
            message,
            Some(digest),
        ));
    }
    let block = SignatureEntry {
        entry: entry.to_string(),
        digest: digest.to_string(),
        signatures: found.signatures.len(),
        signed,
        identity,
        attestations: found.attestations.len(),
        attested,
        found_in: found.places.iter().copied().collect(),
    };
    (block, findings)
}

/// Each stored item judged: `Ok(identity)` when valid, else why not.
fn judge_each<T>(
    items: &[Result<T, String>],
    judge: impl Fn(&T) -> Result<Option<String>, String>,
) -> Vec<Result<Option<String>, String>> {
    items
        .iter()
        .map(|item| item.as_ref().map_err(Clone::clone).and_then(&judge))
        .collect()
}

/// How a manifest stands given its judged items, and the identity of the first valid one.
fn standing(
    judged: &[Result<Option<String>, String>],
    keyed: bool,
    unavailable: bool,
) -> (Standing, Option<String>) {
    if let Some(Ok(identity)) = judged.iter().find(|j| j.is_ok()) {
        let standing = if keyed {
            Standing::Verified
        } else {
            Standing::Unverified
        };
        return (standing, identity.clone());
    }
    match (judged.is_empty(), unavailable) {
        (_, true) => (Standing::NotChecked, None),
        (true, false) => (Standing::Missing, None),
        (false, false) => (Standing::Invalid, None),
    }
}

/// Why each invalid item is, the first three.
fn reasons(judged: &[Result<Option<String>, String>]) -> String {
    let why: Vec<&str> = judged
        .iter()
        .filter_map(|j| j.as_ref().err())
        .map(String::as_str)
        .collect();
    let mut text = why.iter().take(3).copied().collect::<Vec<_>>().join("; ");
    if why.len() > 3 {
        text.push_str(&format!("; and {} more", why.len() - 3));
    }
    text
}

/// A signature of `digest`: its payload's claim, and with keys its verification.
fn signature(
    stored: &Stored,
    digest: &Digest,
    keys: &[PublicKey],
) -> Result<Option<String>, String> {
    let claim = claim(&stored.payload)?;
    if claim.digest != digest.to_string() {
        return Err(format!(
            "the payload signs {}, not this manifest",
            claim.digest
        ));
    }
    if keys.is_empty() {
        return Ok(claim.identity);
    }
    let text = (stored.signature.as_deref()).ok_or_else(|| {
        "the layer has no dev.cosignproject.cosign/signature annotation".to_string()
    })?;
    let raw = base64(text).map_err(|e| format!("the signature is {e}"))?;
    match keys.iter().any(|k| k.verifies(&stored.payload, &raw)) {
        true => Ok(claim.identity),
        false => Err(format!("made with none of the {} keys given", keys.len())),
    }
}

/// An attestation of `digest`: a DSSE envelope holding an in-toto statement about it, and
/// with keys a signature one of them verifies.
fn attestation(
    bytes: &[u8],
    digest: &Digest,
    keys: &[PublicKey],
) -> Result<Option<String>, String> {
    let envelope = Envelope::parse(bytes)?;
    let statement = envelope.statement()?;
    if !statement.subjects.contains(digest) {
        return Err(format!(
            "its statement ({}) is about other subjects",
            statement.predicate_type
        ));
    }
    if keys.is_empty() {
        return Ok(None);
    }
    let signed = envelope.signed_bytes();
    let verified =
        (envelope.signatures.iter()).any(|s| keys.iter().any(|k| k.verifies(&signed, s)));
    match verified {
        true => Ok(None),
        false => Err(format!("made with none of the {} keys given", keys.len())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{HostResult, HostStatus};

    fn d(s: &str) -> Digest {
        Digest::sha256(s.as_bytes())
    }

    fn host(platform: &str, selected: &Digest) -> HostResult {
        HostResult {
            platform: platform.into(),
            runtime: None,
            isolation: None,
            selected: Some(selected.to_string()),
            os_version: None,
            status: HostStatus::Ok,
            nodes: vec![],
        }
    }

    #[test]
    fn the_index_and_each_pulled_entry_are_subjects_once_named_by_their_hosts() {
        let mut report = ImageReport::unread("r", vec![]);
        report.digest = Some(d("top").to_string());
        report.hosts = vec![
            host("linux/amd64", &d("l")),
            host("windows/amd64:10.0.17763", &d("w")),
            host("windows/amd64:10.0.17763", &d("w")),
            host("windows/amd64:10.0.20348", &d("w")),
        ];
        let subjects = signed_subjects(&report);
        let want = [
            ("index".to_string(), d("top")),
            ("linux/amd64".to_string(), d("l")),
            (
                "windows/amd64:10.0.17763, windows/amd64:10.0.20348".to_string(),
                d("w"),
            ),
        ];
        assert_eq!(subjects, want);
        report.hosts = vec![host("linux/amd64", &d("top"))];
        assert_eq!(signed_subjects(&report), [("image".to_string(), d("top"))]);
        report.digest = None;
        assert!(signed_subjects(&report).is_empty());
    }

    #[test]
    fn a_signature_of_another_digest_is_invalid_and_attestations_may_be_left_out() {
        let payload = |digest: &Digest| {
            format!(
                r#"{{"critical":{{"identity":{{"docker-reference":"r.io/a:v1"}},"image":{{"docker-manifest-digest":"{digest}"}},"type":"cosign container image signature"}}}}"#
            )
            .into_bytes()
        };
        let stored = |digest: &Digest| Stored {
            payload: payload(digest),
            signature: None,
        };
        let check = SignatureCheck {
            keys: vec![],
            attestations: false,
        };
        let mut found = Found::default();
        found.signatures = vec![Ok(stored(&d("other")))];
        let (block, findings) = judge_signatures("linux/amd64", &d("l"), &found, &check);
        assert_eq!(
            (block.signed, block.attested),
            (Standing::Invalid, Standing::NotRequired)
        );
        assert_eq!(findings.len(), 1);
        assert_eq!(findings[0].rule, Rule::SignatureInvalid);
        assert!(
            findings[0]
                .message
                .contains(&format!("signs {}", d("other")))
        );
        let mut found = Found::default();
        found.signatures = vec![Err("junk".into()), Ok(stored(&d("l")))];
        let (block, findings) = judge_signatures("linux/amd64", &d("l"), &found, &check);
        assert_eq!(block.signed, Standing::Unverified);
        assert_eq!(block.identity.as_deref(), Some("r.io/a:v1"));
        assert!(findings.is_empty());
        let mut unavailable = Found::default();
        unavailable.unavailable = vec!["HTTP 503".into()];
        let (block, findings) = judge_signatures("index", &d("i"), &unavailable, &check);
        assert_eq!(block.signed, Standing::NotChecked);
        let rules: Vec<Rule> = findings.iter().map(|f| f.rule).collect();
        assert_eq!(rules, [Rule::FetchError]);
    }
}
