//! `ClusterImagePolicy` and `ImagePolicy` (config.openshift.io/v1 and v1alpha1), rendered into
//! policy.json and registries.d as the Machine Config Operator renders them
//! (openshift/machine-config-operator `pkg/controller/container-runtime-config/helpers.go`):
//! each policy becomes one `sigstoreSigned` requirement (`policyItemFromSpec`: `PublicKey` →
//! `keyData` and, when given, `rekorKeyData`; `FulcioCAWithRekor` → `fulcio` + Rekor;
//! `signedIdentity.matchPolicy` → `matchRepoDigestOrExact` (also when empty),
//! `matchRepository`, `exactRepository`, `remapIdentity`), appended to
//! `transports.docker[scope]` for each of its scopes (`updatePolicyJSON`); and every scope,
//! with its mirrors, gets `use-sigstore-attachments: true`
//! (`generateSigstoreRegistriesdConfig`). An `ImagePolicy` applies to the pods of its
//! namespace (`/etc/crio/policies/<namespace>.json`); imgcheck applies it to every pull.

use serde::Deserialize;

use super::document::{PolicyRequirement, SignaturePolicy, SignedIdentity, Sigstore, SigstoreRoot};
use super::registries_d::RegistriesD;
use crate::signature::PublicKey;
use crate::signature::payload::base64;

/// The policy.json MCO writes when nothing else is configured (its `policy.yaml` template):
/// every image passes.
pub const MCO_DEFAULT_POLICY: &str = r#"{"default":[{"type":"insecureAcceptAnything"}],"transports":{"docker-daemon":{"":[{"type":"insecureAcceptAnything"}]}}}"#;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawObject {
    #[serde(default)]
    api_version: String,
    #[serde(default)]
    kind: String,
    #[serde(default)]
    items: Vec<RawObject>,
    spec: Option<RawSpec>,
    #[serde(default)]
    metadata: RawMeta,
}

#[derive(Deserialize, Default)]
struct RawMeta {
    #[serde(default)]
    name: String,
}

#[derive(Deserialize)]
struct RawSpec {
    #[serde(default)]
    scopes: Vec<String>,
    policy: RawPolicy,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawPolicy {
    root_of_trust: RawRoot,
    #[serde(default)]
    signed_identity: Option<RawIdentity>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawRoot {
    policy_type: String,
    public_key: Option<RawPublicKey>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawPublicKey {
    key_data: String,
    #[serde(default)]
    rekor_key_data: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawIdentity {
    #[serde(default)]
    match_policy: String,
    exact_repository: Option<RawRepository>,
    remap_identity: Option<RawRemap>,
}

#[derive(Deserialize)]
struct RawRepository {
    repository: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawRemap {
    prefix: String,
    signed_prefix: String,
}

/// Renders the image policies of YAML `text` (documents, or a `List`) onto `policy` and
/// `registries`: the scopes each names, with its requirement.
pub fn render_image_policies(
    text: &str,
    policy: &mut SignaturePolicy,
    registries: &mut RegistriesD,
) -> Result<usize, String> {
    crate::yaml::check_yaml(text).map_err(|e| e.to_string())?;
    let mut count = 0;
    for doc in serde_yaml_ng::Deserializer::from_str(text) {
        let raw: Option<RawObject> =
            Option::deserialize(doc).map_err(|e| format!("not a Kubernetes object: {e}"))?;
        let Some(raw) = raw else { continue };
        let objects = match raw.kind.as_str() {
            "List" => raw.items,
            _ => vec![raw],
        };
        for object in objects {
            let (scopes, requirement) = rendered(&object)?;
            for scope in scopes {
                registries.add_policy_scope(&scope);
                policy
                    .docker
                    .entry(scope)
                    .or_default()
                    .push(requirement.clone());
            }
            count += 1;
        }
    }
    Ok(count)
}

/// The scopes and the requirement of one object.
fn rendered(object: &RawObject) -> Result<(Vec<String>, PolicyRequirement), String> {
    let what = format!("{} {}", object.kind, object.metadata.name);
    if !matches!(object.kind.as_str(), "ClusterImagePolicy" | "ImagePolicy")
        || !matches!(
            object.api_version.as_str(),
            "config.openshift.io/v1" | "config.openshift.io/v1alpha1"
        )
    {
        return Err(format!(
            "{what} ({}): not a config.openshift.io/v1 or v1alpha1 ClusterImagePolicy or ImagePolicy",
            object.api_version
        ));
    }
    let spec = object.spec.as_ref().ok_or(format!("{what}: no spec"))?;
    if spec.scopes.is_empty() {
        return Err(format!("{what}: no spec.scopes"));
    }
    let requirement = requirement(&spec.policy).map_err(|e| format!("{what}: {e}"))?;
    Ok((spec.scopes.clone(), requirement))
}

/// MCO's `policyItemFromSpec`.
fn requirement(policy: &RawPolicy) -> Result<PolicyRequirement, String> {
    let root = &policy.root_of_trust;
    let (root, rekor) = match root.policy_type.as_str() {
        "PublicKey" => {
            let key = root
                .public_key
                .as_ref()
                .ok_or("PublicKey without publicKey")?;
            let pem = base64(&key.key_data).map_err(|e| format!("publicKey.keyData is {e}"))?;
            let pem = String::from_utf8(pem).map_err(|_| "publicKey.keyData is not PEM text")?;
            let key = PublicKey::parse(&pem, std::path::Path::new("publicKey.keyData"))
                .map_err(|e| format!("publicKey.keyData: {e}"))?;
            let rekor = root
                .public_key
                .as_ref()
                .and_then(|k| k.rekor_key_data.as_ref());
            (
                SigstoreRoot::Keys(vec![key]),
                rekor.is_some_and(|r| !r.is_empty()),
            )
        }
        "FulcioCAWithRekor" => (SigstoreRoot::Certificates("fulcio"), true),
        "PKI" => (SigstoreRoot::Certificates("pki"), false),
        other => return Err(format!("unknown rootOfTrust.policyType {other:?}")),
    };
    let identity = match &policy.signed_identity {
        None => SignedIdentity::MatchRepoDigestOrExact,
        Some(i) => match i.match_policy.as_str() {
            "" | "MatchRepoDigestOrExact" => SignedIdentity::MatchRepoDigestOrExact,
            "MatchRepository" => SignedIdentity::MatchRepository,
            "ExactRepository" => SignedIdentity::ExactRepository(
                (i.exact_repository
                    .as_ref()
                    .ok_or("ExactRepository without exactRepository")?)
                .repository
                .clone(),
            ),
            "RemapIdentity" => {
                let remap = i
                    .remap_identity
                    .as_ref()
                    .ok_or("RemapIdentity without remapIdentity")?;
                SignedIdentity::RemapIdentity {
                    prefix: remap.prefix.clone(),
                    signed_prefix: remap.signed_prefix.clone(),
                }
            }
            other => return Err(format!("unknown signedIdentity.matchPolicy {other:?}")),
        },
    };
    Ok(PolicyRequirement::SigstoreSigned(Sigstore {
        root,
        rekor,
        identity,
    }))
}
