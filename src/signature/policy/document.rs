//! A containers-policy.json(5) document, parsed as containers/image parses it
//! (`signature/policy_config.go`, `policy_config_sigstore.go`): `default`, the `docker`
//! transport's scopes (other transports are read and ignored: a node pulls through `docker`),
//! and each requirement with its `signedIdentity`. Unknown keys and requirement types are
//! refused, as containers/image refuses them; an empty requirement list too. Keys named by
//! `keyPath`/`keyPaths` are read (bounded), `keyData`/`keyDatas` decoded; a key is never shown.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

use crate::signature::PublicKey;
use crate::signature::payload::base64;

/// The effective policy of a node: the default requirements and the `docker` transport's
/// scopes (`transports.docker`), each a non-empty list of requirements, all of which must hold.
#[derive(Debug, Clone, Default)]
pub struct SignaturePolicy {
    /// `default`: what applies when no scope matches.
    pub default: Vec<PolicyRequirement>,
    /// `transports.docker`: scope (`host`, `host/ns`, `host/ns/repo`, `repo:tag`,
    /// `repo@digest`, `*.domain`, or `""` for the transport's default) → requirements.
    pub docker: BTreeMap<String, Vec<PolicyRequirement>>,
}

/// One requirement (`type`).
#[derive(Debug, Clone)]
pub enum PolicyRequirement {
    /// `insecureAcceptAnything`: every image passes.
    InsecureAcceptAnything,
    /// `reject`: every image is refused.
    Reject,
    /// `signedBy`: GPG "simple signing"; not predicted (no GPG here).
    SignedBy,
    /// `sigstoreSigned`.
    SigstoreSigned(Sigstore),
}

/// A `sigstoreSigned` requirement.
#[derive(Debug, Clone)]
pub struct Sigstore {
    /// Where its trust comes from.
    pub root: SigstoreRoot,
    /// `rekorPublicKey*` is set: each signature must carry a Rekor SET that key verifies.
    pub rekor: bool,
    /// `signedIdentity` (default `matchRepoDigestOrExact`).
    pub identity: SignedIdentity,
}

/// The root of trust of a `sigstoreSigned` requirement.
#[derive(Debug, Clone)]
pub enum SigstoreRoot {
    /// `keyPath`, `keyPaths`, `keyData`, `keyDatas`: one of these keys must verify.
    Keys(Vec<PublicKey>),
    /// `fulcio` (keyless, with Rekor) or `pki`: certificates not verified offline here.
    Certificates(&'static str),
}

/// `signedIdentity`: which `docker-reference` a signature must name for the image pulled
/// (containers/image `signature/policy_reference_match.go`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SignedIdentity {
    /// The default: the same tag, or (pulled by digest) the same repository.
    MatchRepoDigestOrExact,
    /// The same repository and tag or digest.
    MatchExact,
    /// The same repository, any tag.
    MatchRepository,
    /// Exactly this reference, whatever is pulled.
    ExactReference(String),
    /// This repository, whatever is pulled.
    ExactRepository(String),
    /// The pulled name with `prefix` replaced by `signed_prefix`, then as the default.
    RemapIdentity {
        /// `prefix`: what the pulled name starts with.
        prefix: String,
        /// `signedPrefix`: what the signer wrote instead.
        signed_prefix: String,
    },
}

impl PolicyRequirement {
    /// The `type` as written in policy.json.
    pub fn type_name(&self) -> &'static str {
        match self {
            PolicyRequirement::InsecureAcceptAnything => "insecureAcceptAnything",
            PolicyRequirement::Reject => "reject",
            PolicyRequirement::SignedBy => "signedBy",
            PolicyRequirement::SigstoreSigned(_) => "sigstoreSigned",
        }
    }
}

impl SignedIdentity {
    /// The `type` as written in policy.json.
    pub fn type_name(&self) -> &'static str {
        match self {
            SignedIdentity::MatchRepoDigestOrExact => "matchRepoDigestOrExact",
            SignedIdentity::MatchExact => "matchExact",
            SignedIdentity::MatchRepository => "matchRepository",
            SignedIdentity::ExactReference(_) => "exactReference",
            SignedIdentity::ExactRepository(_) => "exactRepository",
            SignedIdentity::RemapIdentity { .. } => "remapIdentity",
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPolicy {
    default: Option<Vec<Value>>,
    #[serde(default)]
    transports: BTreeMap<String, BTreeMap<String, Vec<Value>>>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawSigstore {
    key_path: Option<String>,
    key_paths: Option<Vec<String>>,
    key_data: Option<String>,
    key_datas: Option<Vec<String>>,
    fulcio: Option<Value>,
    pki: Option<Value>,
    rekor_public_key_path: Option<String>,
    rekor_public_key_paths: Option<Vec<String>>,
    rekor_public_key_data: Option<String>,
    rekor_public_key_datas: Option<Vec<String>>,
    signed_identity: Option<Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawIdentity {
    #[serde(rename = "type")]
    kind: String,
    docker_reference: Option<String>,
    docker_repository: Option<String>,
    prefix: Option<String>,
    signed_prefix: Option<String>,
}

/// Parses policy.json `text` (the error says where in it, never a key).
pub fn parse_policy(text: &str) -> Result<SignaturePolicy, String> {
    let raw: RawPolicy = serde_json::from_str(text).map_err(|e| format!("not a policy: {e}"))?;
    let default = raw
        .default
        .ok_or("no \"default\": containers/image requires one")?;
    let mut policy = SignaturePolicy {
        default: requirements(&default).map_err(|e| format!("default: {e}"))?,
        docker: BTreeMap::new(),
    };
    for (scope, reqs) in raw.transports.get("docker").into_iter().flatten() {
        let reqs = requirements(reqs).map_err(|e| format!("transports.docker[{scope:?}]: {e}"))?;
        policy.docker.insert(scope.clone(), reqs);
    }
    Ok(policy)
}

/// A list of requirements (never empty).
fn requirements(list: &[Value]) -> Result<Vec<PolicyRequirement>, String> {
    if list.is_empty() {
        return Err("no requirements (containers/image refuses an empty list)".into());
    }
    list.iter().map(requirement).collect()
}

/// One requirement object.
fn requirement(value: &Value) -> Result<PolicyRequirement, String> {
    let Some(kind) = value.get("type").and_then(Value::as_str) else {
        return Err("a requirement without a \"type\"".into());
    };
    let only_type = || match value.as_object().map(|o| o.len()) {
        Some(1) => Ok(()),
        _ => Err(format!("{kind}: takes no other key")),
    };
    match kind {
        "insecureAcceptAnything" => only_type().map(|_| PolicyRequirement::InsecureAcceptAnything),
        "reject" => only_type().map(|_| PolicyRequirement::Reject),
        "signedBy" => Ok(PolicyRequirement::SignedBy),
        "sigstoreSigned" => {
            let mut object = value.as_object().cloned().unwrap_or_default();
            object.remove("type");
            let raw: RawSigstore = serde_json::from_value(Value::Object(object))
                .map_err(|e| format!("sigstoreSigned: {e}"))?;
            sigstore(raw).map(PolicyRequirement::SigstoreSigned)
        }
        other => Err(format!("unknown requirement type {other:?}")),
    }
}

/// A `sigstoreSigned` requirement: exactly one root of trust, as `newPRSigstoreSigned` checks.
fn sigstore(raw: RawSigstore) -> Result<Sigstore, String> {
    let mut keys = Vec::new();
    for path in raw.key_path.iter().chain(raw.key_paths.iter().flatten()) {
        keys.push(key_file(path)?);
    }
    for data in raw.key_data.iter().chain(raw.key_datas.iter().flatten()) {
        keys.push(key_data(data)?);
    }
    let roots = [!keys.is_empty(), raw.fulcio.is_some(), raw.pki.is_some()];
    if roots.iter().filter(|r| **r).count() != 1 {
        return Err(
            "sigstoreSigned: exactly one of keyPath/keyPaths/keyData/keyDatas, \
                    fulcio or pki must be set"
                .into(),
        );
    }
    let root = match (raw.fulcio.is_some(), raw.pki.is_some()) {
        (true, _) => SigstoreRoot::Certificates("fulcio"),
        (_, true) => SigstoreRoot::Certificates("pki"),
        _ => SigstoreRoot::Keys(keys),
    };
    let rekor = raw.rekor_public_key_path.is_some()
        || raw.rekor_public_key_paths.is_some()
        || raw.rekor_public_key_data.is_some()
        || raw.rekor_public_key_datas.is_some();
    let identity = match raw.signed_identity {
        None => SignedIdentity::MatchRepoDigestOrExact,
        Some(v) => signed_identity(v)?,
    };
    Ok(Sigstore {
        root,
        rekor,
        identity,
    })
}

/// A `signedIdentity` object.
fn signed_identity(value: Value) -> Result<SignedIdentity, String> {
    let raw: RawIdentity =
        serde_json::from_value(value).map_err(|e| format!("signedIdentity: {e}"))?;
    let need = |field: Option<String>, name: &str| {
        field.ok_or_else(|| format!("signedIdentity {}: no {name}", raw.kind))
    };
    Ok(match raw.kind.as_str() {
        "matchRepoDigestOrExact" => SignedIdentity::MatchRepoDigestOrExact,
        "matchExact" => SignedIdentity::MatchExact,
        "matchRepository" => SignedIdentity::MatchRepository,
        "exactReference" => {
            SignedIdentity::ExactReference(need(raw.docker_reference.clone(), "dockerReference")?)
        }
        "exactRepository" => SignedIdentity::ExactRepository(need(
            raw.docker_repository.clone(),
            "dockerRepository",
        )?),
        "remapIdentity" => SignedIdentity::RemapIdentity {
            prefix: need(raw.prefix.clone(), "prefix")?,
            signed_prefix: need(raw.signed_prefix.clone(), "signedPrefix")?,
        },
        other => return Err(format!("unknown signedIdentity type {other:?}")),
    })
}

/// The largest key file read.
const MAX_KEY_BYTES: u64 = 64 * 1024;

/// A key named by `keyPath`: a path on the node, which must be readable here too.
fn key_file(path: &str) -> Result<PublicKey, String> {
    let text = crate::input::read_file(Path::new(path), MAX_KEY_BYTES).map_err(|e| {
        format!(
            "keyPath {path}: {} (the policy names a file of the node: copy it here at that \
             path, or give the key as keyData)",
            e.reason
        )
    })?;
    PublicKey::parse(&text, Path::new(path)).map_err(|e| format!("keyPath {path}: {e}"))
}

/// A key given inline (`keyData`: the PEM, base64-encoded).
fn key_data(data: &str) -> Result<PublicKey, String> {
    let pem = base64(data).map_err(|e| format!("keyData is {e}"))?;
    let pem = String::from_utf8(pem).map_err(|_| "keyData is not a PEM text".to_string())?;
    PublicKey::parse(&pem, Path::new("keyData")).map_err(|e| format!("keyData: {e}"))
}
