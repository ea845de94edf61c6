//! The decision for one pull, case by case: source containers/image
//! `signature/policy_eval.go` (`IsRunningImageAllowed`: all requirements of the scope) and
//! `signature/policy_eval_sigstore.go` (`isRunningImageAllowed`, `isSignatureAccepted`).

use aws_lc_rs::encoding::AsDer;
use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{self as lc, KeyPair as _};
use base64::Engine as _;

use super::*;
use crate::digest::Digest;
use crate::reference::RegistryRef;
use crate::signature::Stored;

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

fn key() -> (lc::EcdsaKeyPair, String) {
    let k = lc::EcdsaKeyPair::generate(&lc::ECDSA_P256_SHA256_ASN1_SIGNING).unwrap();
    let der = B64.encode(k.public_key().as_der().unwrap().as_ref());
    let (a, b) = der.split_at(64);
    let pem = format!("-----BEGIN PUBLIC KEY-----\n{a}\n{b}\n-----END PUBLIC KEY-----\n");
    (k, B64.encode(pem))
}

fn signed(k: &lc::EcdsaKeyPair, digest: &Digest, identity: &str) -> Result<Stored, String> {
    let payload = format!(
        r#"{{"critical":{{"identity":{{"docker-reference":"{identity}"}},"image":{{"docker-manifest-digest":"{digest}"}},"type":"cosign container image signature"}},"optional":null}}"#
    );
    let sig = k.sign(&SystemRandom::new(), payload.as_bytes()).unwrap();
    Ok(Stored {
        payload: payload.into_bytes(),
        signature: Some(B64.encode(sig)),
    })
}

fn r(s: &str) -> RegistryRef {
    RegistryRef::parse_pull_spec(s).unwrap()
}

fn policy(text: &str) -> NodeSignaturePolicy {
    let mut registries = RegistriesD::default();
    registries
        .add("default-docker:\n  use-sigstore-attachments: true\n")
        .unwrap();
    NodeSignaturePolicy {
        policy: parse_policy(text).unwrap(),
        registries,
    }
}

fn kind(d: &PullDecision) -> (&'static str, &str) {
    match d {
        PullDecision::Admitted => ("admitted", ""),
        PullDecision::Rejected(_, why) => ("rejected", why),
        PullDecision::NotPredicted(_, why) => ("not-predicted", why),
    }
}

/// A `sigstoreSigned` scope (keyData) with `signedIdentity` `identity`.
fn sigstore(key_data: &str, identity: &str) -> String {
    format!(
        r#"{{"default":[{{"type":"reject"}}],"transports":{{"docker":{{"q.io/a":[{{"type":"sigstoreSigned","keyData":"{key_data}","signedIdentity":{{"type":"{identity}"}}}}]}}}}}}"#
    )
}

/// The decision (kind, why) for a pull of `q.io/a/b:v1`, instance `instance`, from itself.
fn decide(text: &str, instance: &Digest, sigs: &[Result<Stored, String>]) -> (String, String) {
    let logical = r("q.io/a/b:v1");
    let pull = SignedPull {
        logical: &logical,
        instance,
        physical: &logical,
    };
    let admission = policy(text).admit(pull, sigs);
    let (kind, why) = kind(&admission.decision);
    (kind.to_string(), why.to_string())
}

/// Each row: what is stored, the decision and the reason's words (`isSignatureAccepted`:
/// key, then digest, then identity; none there: "no signature exists").
#[test]
fn a_sigstore_requirement_accepts_one_signature_by_key_digest_and_identity() {
    let (ours, data) = key();
    let (theirs, _) = key();
    let m = Digest::sha256(b"linux/amd64 manifest");
    let policy = sigstore(&data, "matchRepoDigestOrExact");
    let good = signed(&ours, &m, "q.io/a/b:v1");
    let rows = [
        (vec![good.clone()], "admitted", ""),
        (vec![], "rejected", "none there"),
        (
            vec![signed(&theirs, &m, "q.io/a/b:v1")],
            "rejected",
            "other key",
        ),
        (
            vec![signed(&ours, &m, "q.io/a/b:v2")],
            "rejected",
            "identity mismatch",
        ),
        (
            vec![signed(&ours, &Digest::sha256(b"x"), "q.io/a/b:v1")],
            "rejected",
            "bad signature",
        ),
        (vec![Err("junk".into()), good.clone()], "admitted", ""),
    ];
    for (sigs, want, why) in rows {
        let (got, reason) = decide(&policy, &m, &sigs);
        assert_eq!(got, want, "{sigs:?}: {reason}");
        assert!(reason.contains(why), "{reason}");
    }
    let repository = sigstore(&data, "matchRepository");
    let v2 = [signed(&ours, &m, "q.io/a/b:v2")];
    assert_eq!(decide(&repository, &m, &v2).0, "admitted");
    let logical = r("q.io/a/b:v1");
    let pull = SignedPull {
        logical: &logical,
        instance: &m,
        physical: &logical,
    };
    let mut node = super::tests::policy(&policy);
    assert_eq!(
        node.admit(pull, std::slice::from_ref(&good)).scope,
        "transports.docker[\"q.io/a\"]"
    );
    node.registries = RegistriesD::default();
    let d = node.admit(pull, &[good]).decision;
    assert!(kind(&d).1.contains("use-sigstore-attachments"), "{d:?}");
}

/// `reject`, `insecureAcceptAnything`, and what is not predicted: GPG, keyless (unless
/// nothing is there at all).
#[test]
fn other_requirements_decide_or_are_not_predicted() {
    let m = Digest::sha256(b"m");
    let (ours, _) = key();
    let good = vec![signed(&ours, &m, "q.io/a/b:v1")];
    let keyless = r#"{"default":[{"type":"sigstoreSigned","fulcio":{"caPath":"/ca","oidcIssuer":"i","subjectEmail":"e"},"rekorPublicKeyPath":"/r"}]}"#;
    let rows = [
        (
            r#"{"default":[{"type":"insecureAcceptAnything"}],"transports":{"docker":{"q.io":[{"type":"reject"}]}}}"#,
            good.clone(),
            "rejected",
            "rejects every image",
        ),
        (
            r#"{"default":[{"type":"insecureAcceptAnything"}]}"#,
            vec![],
            "admitted",
            "",
        ),
        (
            r#"{"default":[{"type":"signedBy","keyType":"GPGKeys","keyPath":"/k.gpg"}]}"#,
            vec![],
            "not-predicted",
            "GPG",
        ),
        (
            r#"{"default":[{"type":"signedBy","keyType":"GPGKeys","keyPath":"/k.gpg"},{"type":"reject"}]}"#,
            vec![],
            "rejected",
            "rejects",
        ),
        (keyless, good.clone(), "not-predicted", "keyless"),
        (keyless, vec![], "rejected", "none there"),
    ];
    for (text, sigs, want, why) in rows {
        let (got, reason) = decide(text, &m, &sigs);
        assert_eq!(got, want, "{text}: {reason}");
        assert!(reason.contains(why), "{text}: {reason}");
    }
}

/// MCO's rendering (`policyItemFromSpec`, `updatePolicyJSON`,
/// `generateSigstoreRegistriesdConfig`): a ClusterImagePolicy becomes a sigstoreSigned
/// requirement of each scope, read from the scope and its mirrors.
#[test]
fn a_cluster_image_policy_renders_as_mco_renders_it() {
    let (ours, our_data) = key();
    let yaml = format!(
        "apiVersion: config.openshift.io/v1\nkind: ClusterImagePolicy\nmetadata: {{name: p}}\nspec:\n  scopes: [q.io/a]\n  policy:\n    rootOfTrust:\n      policyType: PublicKey\n      publicKey:\n        keyData: {our_data}\n    signedIdentity:\n      matchPolicy: RemapIdentity\n      remapIdentity: {{prefix: q.io/a, signedPrefix: build.io/a}}\n"
    );
    let mut node = NodeSignaturePolicy {
        policy: parse_policy(MCO_DEFAULT_POLICY).unwrap(),
        registries: RegistriesD::default(),
    };
    assert_eq!(
        render_image_policies(&yaml, &mut node.policy, &mut node.registries),
        Ok(1)
    );
    let instance = Digest::sha256(b"m");
    let (logical, mirror) = (r("q.io/a/b:v1"), r("mirror.local/a/b:v1"));
    let pull = SignedPull {
        logical: &logical,
        instance: &instance,
        physical: &mirror,
    };
    let sig = [signed(&ours, &instance, "build.io/a/b:v1")];
    assert_eq!(node.admit(pull, &sig).decision, PullDecision::Admitted);
    let other = r("z.io/x:v1");
    let outside = SignedPull {
        logical: &other,
        physical: &other,
        ..pull
    };
    let admission = node.admit(outside, &[]);
    assert_eq!(
        (admission.scope.as_str(), admission.decision),
        ("default", PullDecision::Admitted)
    );
    for bad in [
        "kind: ClusterImagePolicy\napiVersion: v1\nspec: {scopes: [a], policy: {rootOfTrust: {policyType: PublicKey}}}\n",
        "apiVersion: config.openshift.io/v1\nkind: ClusterImagePolicy\nspec:\n  scopes: [a]\n  policy: {rootOfTrust: {policyType: Magic}}\n",
    ] {
        let mut p = SignaturePolicy::default();
        assert!(render_image_policies(bad, &mut p, &mut RegistriesD::default()).is_err());
    }
}

#[test]
fn bad_policies_are_refused_naming_where() {
    for (text, says) in [
        ("{}", "default"),
        (r#"{"default":[]}"#, "no requirements"),
        (r#"{"default":[{"type":"magic"}]}"#, "magic"),
        (
            r#"{"default":[{"type":"reject","x":1}]}"#,
            "takes no other key",
        ),
        (r#"{"default":[{"type":"sigstoreSigned"}]}"#, "exactly one"),
        (
            r#"{"default":[{"type":"sigstoreSigned","keyData":"bm90IGEga2V5"}]}"#,
            "keyData",
        ),
        (
            r#"{"default":[{"type":"sigstoreSigned","keyPath":"/nonexistent/k.pub"}]}"#,
            "copy it here",
        ),
        (
            r#"{"default":[{"type":"reject"}],"transports":{"docker":{"q.io":[{"type":"sigstoreSigned","keyDat":"x"}]}}}"#,
            "transports.docker[\"q.io\"]",
        ),
        ("[", "not a policy"),
    ] {
        let err = parse_policy(text).unwrap_err();
        assert!(err.contains(says), "{text}: {err}");
    }
}
