//! Reading what cosign stored for one manifest in a registry repository: the
//! `sha256-<hex>.sig` and `sha256-<hex>.att` tags (cosign's tag scheme, which containers/image
//! and Tekton Chains write and Debian's Distribution 2.8 serves), and the OCI 1.1 referrers
//! with cosign's artifact types — through the referrers API, or, where the registry has none
//! (404), the referrers tag schema (`sha256-<hex>`), as cosign falls back. Every manifest and
//! payload is read under the manifest cap; what cannot be read is kept as a message.

use std::collections::BTreeSet;

use super::payload::{
    ATTESTATION_ARTIFACT, DSSE_ENVELOPE, PayloadLayer, SIGNATURE_ANNOTATION, SIGNATURE_ARTIFACT,
    SIMPLE_SIGNING, layers, referrers,
};
use crate::digest::Digest;
use crate::engine::Place;
use crate::manifest::MAX_MANIFEST_BYTES;
use crate::reference::RegistryRef;
use crate::session::Session;
use crate::source::registry::RegistrySource;
use crate::source::{FetchError, Source};

/// A signature as stored: the payload it signs and its base64 signature (`None`: the layer
/// has no signature annotation).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stored {
    /// The payload's bytes (checked against the layer's digest).
    pub payload: Vec<u8>,
    /// The `dev.cosignproject.cosign/signature` annotation.
    pub signature: Option<String>,
}

/// What was found for one manifest: its signatures and attestations (each read, or why not),
/// where, and what could not be asked at all (the check did not run).
#[derive(Debug, Clone, Default)]
pub struct Found {
    /// Each signature layer, or why it cannot be read.
    pub signatures: Vec<Result<Stored, String>>,
    /// Each attestation layer's DSSE envelope, or why it cannot be read.
    pub attestations: Vec<Result<Vec<u8>, String>>,
    /// Where they were found.
    pub places: BTreeSet<Place>,
    /// Requests that failed in a way asking again may fix (network, auth): the check could
    /// not be completed.
    pub unavailable: Vec<String>,
    seen: BTreeSet<String>,
}

/// Which layers a manifest's kind holds.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Holds {
    Signatures,
    Attestations,
}

/// Reads every signature and attestation stored for `subject` in the repository of
/// `reference`.
pub async fn find(session: &Session, reference: &RegistryRef, subject: &Digest) -> Found {
    let mut found = Found::default();
    let tag = format!("{}-{}", subject.algorithm().name(), subject.hex());
    for (suffix, holds) in [(".sig", Holds::Signatures), (".att", Holds::Attestations)] {
        read_tag(
            session,
            &tagged(reference, &format!("{tag}{suffix}")),
            holds,
            &mut found,
        )
        .await;
    }
    let listed = match session.registry_source(reference) {
        Ok(source) => source.referrers(subject).await,
        Err(e) => Err(e),
    };
    let listed = match listed {
        Ok(Some(list)) => Ok(Some(list)),
        // No referrers API: the referrers tag schema.
        Ok(None) => top(session, &tagged(reference, &tag)).await,
        Err(e) => Err(e),
    };
    match listed {
        Ok(Some(list)) => read_referrers(session, reference, &list, &mut found).await,
        Ok(None) => {}
        Err(e) => found.failed(Holds::Signatures, &format!("referrers of {subject}"), e),
    }
    found
}

/// Reads the signatures of `subject` as containers/image reads sigstore attachments for a
/// pull (`docker/docker_image_src.go`, `appendSigstoreInternalSignatures`): the layers of the
/// `sha256-<hex>.sig` tag of the repository of `reference` only, no referrers.
pub async fn sigstore_attachments(
    session: &Session,
    reference: &RegistryRef,
    subject: &Digest,
) -> Found {
    let mut found = Found::default();
    let tag = format!("{}-{}.sig", subject.algorithm().name(), subject.hex());
    read_tag(
        session,
        &tagged(reference, &tag),
        Holds::Signatures,
        &mut found,
    )
    .await;
    found
}

/// The layers of the manifest at `at`, when there is one.
async fn read_tag(session: &Session, at: &RegistryRef, holds: Holds, found: &mut Found) {
    match top(session, at).await {
        Ok(Some(bytes)) => read_layers(session, at, &bytes, holds, Place::Tag, found).await,
        Ok(None) => {}
        Err(e) => found.failed(holds, &at.to_string(), e),
    }
}

/// The repository of `reference` at `tag`.
fn tagged(reference: &RegistryRef, tag: &str) -> RegistryRef {
    RegistryRef {
        tag: Some(tag.to_string()),
        digest: None,
        ..reference.clone()
    }
}

/// The manifest `reference` names, or `None` when there is none (404).
async fn top(session: &Session, reference: &RegistryRef) -> Result<Option<Vec<u8>>, FetchError> {
    match session.registry_source(reference)?.top().await {
        Ok(fetched) => Ok(Some(fetched.bytes)),
        Err(FetchError::NotFound(_)) => Ok(None),
        Err(e) => Err(e),
    }
}

/// The referrers a list names with cosign's artifact types, each manifest read.
async fn read_referrers(
    session: &Session,
    reference: &RegistryRef,
    list: &[u8],
    found: &mut Found,
) {
    let entries = match referrers(list) {
        Ok(entries) => entries,
        Err(e) => return found.signatures.push(Err(format!("referrers list: {e}"))),
    };
    let Ok(source) = session.registry_source(reference) else {
        return;
    };
    for entry in entries {
        let holds = match entry.artifact_type.as_deref() {
            Some(SIGNATURE_ARTIFACT) => Holds::Signatures,
            Some(ATTESTATION_ARTIFACT) => Holds::Attestations,
            _ => continue,
        };
        let read = match entry.digest.parse::<Digest>() {
            Ok(d) => source.manifest(&d, MAX_MANIFEST_BYTES).await,
            Err(e) => Err(FetchError::bad_input(format!(
                "referrer {}: {e}",
                entry.digest
            ))),
        };
        match read {
            Ok(bytes) => {
                read_layers(session, reference, &bytes, holds, Place::Referrers, found).await
            }
            Err(e) => found.failed(holds, &format!("referrer {}", entry.digest), e),
        }
    }
}

/// The signature or attestation layers of the manifest `bytes`, each payload read from the
/// repository of `at`.
async fn read_layers(
    session: &Session,
    at: &RegistryRef,
    bytes: &[u8],
    holds: Holds,
    place: Place,
    found: &mut Found,
) {
    let layers = match layers(bytes) {
        Ok(l) => l,
        Err(e) => return found.malformed(holds, format!("{at}: {e}")),
    };
    let Ok(source) = session.registry_source(at) else {
        return;
    };
    let wanted = match holds {
        Holds::Signatures => SIMPLE_SIGNING,
        Holds::Attestations => DSSE_ENVELOPE,
    };
    for layer in layers.iter().filter(|l| l.media_type == wanted) {
        if !found.seen.insert(layer.digest.clone()) {
            continue;
        }
        found.places.insert(place);
        match payload(&source, layer).await {
            Ok(payload) => match holds {
                Holds::Signatures => found.signatures.push(Ok(Stored {
                    payload,
                    signature: layer.annotations.get(SIGNATURE_ANNOTATION).cloned(),
                })),
                Holds::Attestations => found.attestations.push(Ok(payload)),
            },
            Err(FetchError::Unavailable(e)) => found.unavailable.push(e.line()),
            Err(e) => found.malformed(holds, format!("{at}: layer {}: {e}", layer.digest)),
        }
    }
}

/// The payload blob of `layer`, under the manifest cap.
async fn payload(source: &RegistrySource, layer: &PayloadLayer) -> Result<Vec<u8>, FetchError> {
    let digest: Digest = (layer.digest.parse())
        .map_err(|e| FetchError::bad_input(format!("digest {}: {e}", layer.digest)))?;
    if layer.size < 0 || layer.size as u64 > MAX_MANIFEST_BYTES {
        return Err(FetchError::TooLarge {
            what: format!("payload {digest}"),
            limit: MAX_MANIFEST_BYTES,
        });
    }
    source.blob(&digest, MAX_MANIFEST_BYTES).await
}

impl Found {
    /// A request about `what` failed with `e`: the check could not run (unavailable), or
    /// what is stored is unusable (a malformed signature).
    fn failed(&mut self, holds: Holds, what: &str, e: FetchError) {
        match e {
            FetchError::Unavailable(d) => self.unavailable.push(format!("{what}: {}", d.line())),
            other => self.malformed(holds, format!("{what}: {other}")),
        }
    }

    /// A signature or attestation that cannot be read, and why.
    fn malformed(&mut self, holds: Holds, why: String) {
        match holds {
            Holds::Signatures => self.signatures.push(Err(why)),
            Holds::Attestations => self.attestations.push(Err(why)),
        }
    }
}
