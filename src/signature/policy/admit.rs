//! What containers/image decides for one pull under a node's policy, predicted from the
//! signatures stored in the repository pulled from. As `PolicyContext.IsRunningImageAllowed`
//! (`signature/policy_eval.go`): the scope's requirements all must hold.
//! `sigstoreSigned` (`signature/policy_eval_sigstore.go`, `isRunningImageAllowed`) reads the
//! image's sigstore signatures — only when registries.d sets `use-sigstore-attachments` for
//! the repository pulled from, and only the `sha256-<hex>.sig` tag of the manifest checked —
//! and admits the image when one of them is accepted: its signature verifies with a key
//! (`VerifySigstorePayload`), its payload names the manifest's digest, and its
//! `docker-reference` fits `signedIdentity`. None there: "A signature was required, but no
//! signature exists". GPG (`signedBy`), Fulcio, PKI and Rekor SETs are not checked here: such
//! a pull is "not predicted", never admitted.

use super::document::{PolicyRequirement, SignaturePolicy, Sigstore, SigstoreRoot};
use super::identity::identity_matches;
use super::registries_d::RegistriesD;
use super::scope::requirements_for;
use crate::digest::Digest;
use crate::reference::RegistryRef;
use crate::signature::Stored;
use crate::signature::payload::{base64, claim};

/// One pull as a node makes it.
#[derive(Debug, Clone, Copy)]
pub struct SignedPull<'a> {
    /// The image as the node names it (the pod's reference): the policy's scope and the
    /// signature's identity are matched against it.
    pub logical: &'a RegistryRef,
    /// The manifest whose signature is checked: the entry the node selects from a list
    /// (containers/image checks the instance, not the list, for a one-platform pull).
    pub instance: &'a Digest,
    /// The repository the image is pulled from (a mirror, or the source): signatures are
    /// read there.
    pub physical: &'a RegistryRef,
}

/// What containers/image would decide.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PullDecision {
    /// Every requirement holds.
    Admitted,
    /// A requirement fails: its `type`, and why.
    Rejected(&'static str, String),
    /// No requirement fails for sure, but one cannot be checked here: its `type`, and why.
    NotPredicted(&'static str, String),
}

/// The decision for one pull, with the scope that applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Admission {
    /// `transports.docker["SCOPE"]`, or `default`.
    pub scope: String,
    /// The decision.
    pub decision: PullDecision,
}

/// What one requirement decides.
enum Held {
    Yes,
    No(String),
    Unknown(String),
}

/// Decides `pull` under `policy` and `registries`, from the signatures stored for the
/// instance in the physical repository (`signatures`: those read from its `.sig` tag).
pub fn admit(
    policy: &SignaturePolicy,
    registries: &RegistriesD,
    pull: SignedPull<'_>,
    signatures: &[Result<Stored, String>],
) -> Admission {
    let (scope, requirements) = requirements_for(policy, pull.logical);
    let scope = match scope {
        Some(s) => format!("transports.docker[{s:?}]"),
        None => "default".to_string(),
    };
    let attachments = registries.use_sigstore_attachments(pull.logical, pull.physical);
    let mut unknown = None;
    for requirement in requirements {
        let held = match requirement {
            PolicyRequirement::InsecureAcceptAnything => Held::Yes,
            PolicyRequirement::Reject => Held::No("the scope rejects every image".into()),
            PolicyRequirement::SignedBy => {
                Held::Unknown("GPG signatures (signedBy) are not predicted by imgcheck".into())
            }
            PolicyRequirement::SigstoreSigned(s) => sigstore(s, pull, attachments, signatures),
        };
        match held {
            Held::Yes => {}
            Held::No(why) => {
                let decision = PullDecision::Rejected(requirement.type_name(), why);
                return Admission { scope, decision };
            }
            Held::Unknown(why) => {
                unknown.get_or_insert((requirement.type_name(), why));
            }
        }
    }
    let decision = match unknown {
        Some((kind, why)) => PullDecision::NotPredicted(kind, why),
        None => PullDecision::Admitted,
    };
    Admission { scope, decision }
}

/// A `sigstoreSigned` requirement on the signatures found.
fn sigstore(
    req: &Sigstore,
    pull: SignedPull<'_>,
    attachments: bool,
    signatures: &[Result<Stored, String>],
) -> Held {
    let repo = format!("{}/{}", pull.physical.registry, pull.physical.repository);
    if !attachments {
        return Held::No(format!(
            "no signature read: registries.d does not set use-sigstore-attachments for {repo}, \
             so CRI-O reads no sigstore signature"
        ));
    }
    if signatures.is_empty() {
        let tag = format!(
            "{}-{}.sig",
            pull.instance.algorithm().name(),
            pull.instance.hex()
        );
        return Held::No(format!(
            "none there: {repo} has no signature ({repo}:{tag})"
        ));
    }
    let keys = match &req.root {
        SigstoreRoot::Keys(keys) => keys,
        SigstoreRoot::Certificates(kind) => {
            return Held::Unknown(format!(
                "{kind} (keyless) signatures are not verified offline by imgcheck"
            ));
        }
    };
    let mut reasons: Vec<String> = Vec::new();
    for stored in signatures {
        match accepted(req, keys, pull, stored) {
            Ok(()) if req.rekor => {
                return Held::Unknown(
                    "a signature verifies, but its Rekor SET (rekorPublicKey*) is not checked \
                     by imgcheck"
                        .into(),
                );
            }
            Ok(()) => return Held::Yes,
            Err(why) if !reasons.contains(&why) => reasons.push(why),
            Err(_) => {}
        }
    }
    Held::No(format!(
        "{} signature(s) in {repo}, none accepted: {}",
        signatures.len(),
        reasons.join("; ")
    ))
}

/// Is one stored signature accepted? In containers/image's order: the signature verifies
/// with a key, the payload names this manifest, its identity fits.
fn accepted(
    req: &Sigstore,
    keys: &[crate::signature::PublicKey],
    pull: SignedPull<'_>,
    stored: &Result<Stored, String>,
) -> Result<(), String> {
    let stored = stored.as_ref().map_err(|e| format!("bad signature: {e}"))?;
    let text = (stored.signature.as_deref()).ok_or("bad signature: no signature annotation")?;
    let raw = base64(text).map_err(|e| format!("bad signature: {e}"))?;
    if !keys.iter().any(|k| k.verifies(&stored.payload, &raw)) {
        return Err("other key: made with none of the policy's keys".into());
    }
    let claim = claim(&stored.payload).map_err(|e| format!("bad signature: {e}"))?;
    if claim.digest != pull.instance.to_string() {
        return Err(format!(
            "bad signature: it signs {}, not this manifest",
            claim.digest
        ));
    }
    let signed = claim.identity.unwrap_or_default();
    match identity_matches(&req.identity, pull.logical, &signed) {
        true => Ok(()),
        false => Err(format!(
            "identity mismatch: signed for {signed:?}, which {} does not accept for {}",
            req.identity.type_name(),
            pull.logical
        )),
    }
}
