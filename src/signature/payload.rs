//! What cosign stores next to an image, parsed: the manifests that carry signatures and
//! attestations (the `sha256-<hex>.sig` / `.att` tags, OCI 1.1 referrers), the "simple
//! signing" payload a signature signs, and the DSSE envelope of an in-toto attestation.
//! Pure functions of bytes; every malformed input is an error message, never a panic.

use std::collections::BTreeMap;

use base64::Engine as _;
use serde::Deserialize;

use crate::digest::Digest;

/// The media type of a cosign signature layer: the simple-signing payload.
pub const SIMPLE_SIGNING: &str = "application/vnd.dev.cosign.simplesigning.v1+json";
/// The layer annotation holding a signature (base64).
pub const SIGNATURE_ANNOTATION: &str = "dev.cosignproject.cosign/signature";
/// The media type of an attestation layer: a DSSE envelope.
pub const DSSE_ENVELOPE: &str = "application/vnd.dsse.envelope.v1+json";
/// The payload type of a DSSE envelope holding an in-toto statement.
pub const IN_TOTO: &str = "application/vnd.in-toto+json";
/// The artifact type of a cosign signature stored as an OCI 1.1 referrer.
pub const SIGNATURE_ARTIFACT: &str = "application/vnd.dev.cosign.artifact.sig.v1+json";
/// The artifact type of a cosign attestation stored as an OCI 1.1 referrer.
pub const ATTESTATION_ARTIFACT: &str = "application/vnd.dev.cosign.artifact.att.v1+json";
/// The `critical.type` of a cosign image signature.
const SIGNATURE_TYPE: &str = "cosign container image signature";

/// A layer of a signature or attestation manifest, as far as this module reads it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PayloadLayer {
    /// The layer's media type.
    pub media_type: String,
    /// Its digest, as written.
    pub digest: String,
    /// Its size, as written.
    pub size: i64,
    /// Its annotations (the signature is one).
    #[serde(default)]
    pub annotations: BTreeMap<String, String>,
}

/// The layers of a manifest (`.sig`, `.att` or a referrer): its config and subject do not
/// matter here.
#[derive(Deserialize)]
struct LayersOnly {
    #[serde(default)]
    layers: Vec<PayloadLayer>,
}

/// The layers of the manifest `bytes`.
pub fn layers(bytes: &[u8]) -> Result<Vec<PayloadLayer>, String> {
    let parsed: LayersOnly =
        serde_json::from_slice(bytes).map_err(|e| format!("not a manifest: {e}"))?;
    Ok(parsed.layers)
}

/// One manifest an OCI 1.1 referrers list names.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Referrer {
    /// The referrer's digest (as written).
    pub digest: String,
    /// Its artifact type (absent from some registries' lists).
    #[serde(default)]
    pub artifact_type: Option<String>,
}

#[derive(Deserialize)]
struct ReferrersIndex {
    #[serde(default)]
    manifests: Vec<Referrer>,
}

/// The manifests an OCI 1.1 referrers list (an image index) names.
pub fn referrers(bytes: &[u8]) -> Result<Vec<Referrer>, String> {
    let parsed: ReferrersIndex =
        serde_json::from_slice(bytes).map_err(|e| format!("not a referrers index: {e}"))?;
    Ok(parsed.manifests)
}

/// What a simple-signing payload claims.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    /// `critical.image.docker-manifest-digest`: the manifest signed.
    pub digest: String,
    /// `critical.identity.docker-reference`: the reference the signer named.
    pub identity: Option<String>,
}

#[derive(Deserialize)]
struct SimpleSigning {
    critical: Critical,
}

#[derive(Deserialize)]
struct Critical {
    #[serde(rename = "type")]
    kind: String,
    image: CriticalImage,
    #[serde(default)]
    identity: Option<CriticalIdentity>,
}

#[derive(Deserialize)]
struct CriticalImage {
    #[serde(rename = "docker-manifest-digest")]
    digest: String,
}

#[derive(Deserialize)]
struct CriticalIdentity {
    #[serde(rename = "docker-reference", default)]
    reference: Option<String>,
}

/// The claim of a cosign simple-signing payload (`critical.type` must be cosign's).
pub fn claim(payload: &[u8]) -> Result<Claim, String> {
    let parsed: SimpleSigning = serde_json::from_slice(payload)
        .map_err(|e| format!("the payload is not a simple-signing document: {e}"))?;
    if parsed.critical.kind != SIGNATURE_TYPE {
        return Err(format!(
            "the payload's critical.type is '{}', not '{SIGNATURE_TYPE}'",
            parsed.critical.kind
        ));
    }
    Ok(Claim {
        digest: parsed.critical.image.digest,
        identity: parsed.critical.identity.and_then(|i| i.reference),
    })
}

/// Decodes base64 as cosign writes it (standard alphabet, padded).
pub fn base64(text: &str) -> Result<Vec<u8>, String> {
    base64::engine::general_purpose::STANDARD
        .decode(text.trim())
        .map_err(|e| format!("not base64: {e}"))
}

/// A DSSE envelope: what was signed (its pre-authentication encoding) and the signatures.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Envelope {
    /// `payloadType`.
    pub payload_type: String,
    /// The payload, decoded.
    pub payload: Vec<u8>,
    /// Each signature, decoded.
    pub signatures: Vec<Vec<u8>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawEnvelope {
    payload_type: String,
    payload: String,
    #[serde(default)]
    signatures: Vec<RawSignature>,
}

#[derive(Deserialize)]
struct RawSignature {
    sig: String,
}

impl Envelope {
    /// Parses a DSSE envelope.
    pub fn parse(bytes: &[u8]) -> Result<Envelope, String> {
        let raw: RawEnvelope =
            serde_json::from_slice(bytes).map_err(|e| format!("not a DSSE envelope: {e}"))?;
        let signatures = (raw.signatures.iter())
            .map(|s| base64(&s.sig))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("a DSSE signature is {e}"))?;
        Ok(Envelope {
            payload: base64(&raw.payload).map_err(|e| format!("the DSSE payload is {e}"))?,
            payload_type: raw.payload_type,
            signatures,
        })
    }

    /// What a DSSE signature signs: `DSSEv1 <len> <type> <len> <payload>`.
    pub fn signed_bytes(&self) -> Vec<u8> {
        let mut out = format!(
            "DSSEv1 {} {} {} ",
            self.payload_type.len(),
            self.payload_type,
            self.payload.len()
        )
        .into_bytes();
        out.extend_from_slice(&self.payload);
        out
    }

    /// The subjects of the in-toto statement the envelope holds, as digests, and its
    /// predicate type.
    pub fn statement(&self) -> Result<Statement, String> {
        if self.payload_type != IN_TOTO {
            return Err(format!(
                "the envelope holds '{}', not an in-toto statement",
                self.payload_type
            ));
        }
        let raw: RawStatement = serde_json::from_slice(&self.payload)
            .map_err(|e| format!("not an in-toto statement: {e}"))?;
        let subjects = (raw.subject.iter())
            .flat_map(|s| s.digest.iter())
            .filter_map(|(alg, hex)| format!("{alg}:{hex}").parse::<Digest>().ok())
            .collect();
        Ok(Statement {
            predicate_type: raw.predicate_type,
            subjects,
        })
    }
}

/// An in-toto statement, as far as the release check reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Statement {
    /// `predicateType` (SLSA provenance, an SBOM, …).
    pub predicate_type: String,
    /// The digests of its subjects.
    pub subjects: Vec<Digest>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawStatement {
    #[serde(default)]
    predicate_type: String,
    #[serde(default)]
    subject: Vec<RawSubject>,
}

#[derive(Deserialize)]
struct RawSubject {
    #[serde(default)]
    digest: BTreeMap<String, String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_simple_signing_payload_claims_a_digest_and_an_identity() {
        let payload = br#"{"critical":{"identity":{"docker-reference":"r.io/a/b:v1"},"image":{"docker-manifest-digest":"sha256:ab"},"type":"cosign container image signature"},"optional":null}"#;
        let c = claim(payload).unwrap();
        assert_eq!(c.digest, "sha256:ab");
        assert_eq!(c.identity.as_deref(), Some("r.io/a/b:v1"));
        let other = br#"{"critical":{"image":{"docker-manifest-digest":"sha256:ab"},"type":"atomic container signature"}}"#;
        assert!(
            claim(other)
                .unwrap_err()
                .contains("atomic container signature")
        );
        for bad in [&b"{"[..], b"[]", b"{\"critical\":{}}", b"\xff"] {
            assert!(claim(bad).is_err());
        }
    }

    #[test]
    fn a_dsse_envelope_signs_its_pre_authentication_encoding() {
        let statement = br#"{"_type":"https://in-toto.io/Statement/v0.1","predicateType":"https://slsa.dev/provenance/v0.2","subject":[{"name":"x","digest":{"sha256":"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"}}],"predicate":{}}"#;
        let b = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
        let json = format!(
            r#"{{"payloadType":"{IN_TOTO}","payload":"{}","signatures":[{{"keyid":"","sig":"{}"}}]}}"#,
            b(statement),
            b(b"sig")
        );
        let env = Envelope::parse(json.as_bytes()).unwrap();
        assert_eq!(env.signatures, vec![b"sig".to_vec()]);
        let pae = env.signed_bytes();
        let head = format!("DSSEv1 {} {IN_TOTO} {} ", IN_TOTO.len(), statement.len());
        assert!(pae.starts_with(head.as_bytes()) && pae.ends_with(statement));
        let st = env.statement().unwrap();
        assert_eq!(st.predicate_type, "https://slsa.dev/provenance/v0.2");
        assert_eq!(st.subjects, vec![Digest::sha256(b"")]);
        assert!(Envelope::parse(br#"{"payloadType":"x","payload":"%%"}"#).is_err());
        let other = Envelope {
            payload_type: "text/plain".into(),
            ..env
        };
        assert!(other.statement().is_err());
    }

    #[test]
    fn manifests_and_referrers_lists_give_their_layers_and_entries() {
        let m = format!(
            r#"{{"schemaVersion":2,"layers":[{{"mediaType":"{SIMPLE_SIGNING}","digest":"sha256:aa","size":3,"annotations":{{"{SIGNATURE_ANNOTATION}":"c2ln"}}}}]}}"#
        );
        let l = layers(m.as_bytes()).unwrap();
        assert_eq!(l[0].annotations[SIGNATURE_ANNOTATION], "c2ln");
        let r = format!(
            r#"{{"schemaVersion":2,"manifests":[{{"mediaType":"x","digest":"sha256:bb","size":1,"artifactType":"{SIGNATURE_ARTIFACT}"}}]}}"#
        );
        let r = referrers(r.as_bytes()).unwrap();
        assert_eq!(r[0].artifact_type.as_deref(), Some(SIGNATURE_ARTIFACT));
        assert!(layers(b"null").is_err() && referrers(b"1").is_err());
    }
}
