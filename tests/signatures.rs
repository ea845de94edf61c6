//! Issue 35, the release side: `verify --signatures [--key]` against Debian's Distribution 2.8.
//!
//! Debian's skopeo 1.9.3 (and buildah, from the same containers/image package) cannot make
//! sigstore signatures: its `copy --sign-by-sigstore-private-key` fails with "Debian-local
//! change: sigstore disabled", and so does checking one under a `sigstoreSigned` policy
//! ([`debian_skopeo_has_sigstore_disabled`] holds that, so the day it changes this file is
//! told to sign with skopeo). So the signatures here are written as containers/image writes
//! them (the `.sig` attachment layout, the simple-signing payload) and signed with AWS-LC, an
//! implementation other than the RustCrypto crates imgcheck verifies with; attestations in
//! cosign's `.att` layout; and skopeo still checks the layout: under a `sigstoreSigned` policy
//! it finds a signature exactly where imgcheck does.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use aws_lc_rs::encoding::AsDer as _;
use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{self as lc, KeyPair as _};
use base64::Engine as _;
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};
use tempfile::TempDir;

use crate::common::{Registry, fixture, json_of, run_imgcheck, sha256_digest};

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;
const SIMPLE_SIGNING: &str = "application/vnd.dev.cosign.simplesigning.v1+json";
const DSSE: &str = "application/vnd.dsse.envelope.v1+json";
const IN_TOTO: &str = "application/vnd.in-toto+json";

/// A cosign key pair on disk: the encrypted private key skopeo signs with, its passphrase
/// file, the public key imgcheck verifies with, and the key itself to sign attestations.
pub(crate) struct KeyPair {
    _dir: TempDir,
    pub(crate) private: PathBuf,
    pub(crate) passphrase: PathBuf,
    pub(crate) public: PathBuf,
    pub(crate) key: lc::EcdsaKeyPair,
}

/// A new P-256 key pair, the private key written as `cosign generate-key-pair` writes it:
/// PEM `ENCRYPTED SIGSTORE PRIVATE KEY` around the JSON of go-securesystemslib's `encrypted`
/// package (scrypt N=32768 r=8 p=1 over a 32-byte salt, then NaCl secretbox with a 24-byte
/// nonce) sealing the key's PKCS#8 DER (sigstore `pkg/cryptoutils`, cosign `pkg/cosign/keys.go`).
pub(crate) fn key_pair(passphrase: &str) -> KeyPair {
    use crypto_secretbox::aead::{Aead, KeyInit};
    let dir = tempfile::tempdir().unwrap();
    let key = lc::EcdsaKeyPair::generate(&lc::ECDSA_P256_SHA256_ASN1_SIGNING).unwrap();
    let der = key.to_pkcs8v1().unwrap();
    let seed = Sha256::digest(der.as_ref());
    let (salt, nonce) = (
        Sha256::digest(seed),
        &Sha256::digest(Sha256::digest(seed))[..24],
    );
    let params = scrypt::Params::new(15, 8, 1).unwrap();
    let mut secret = [0u8; 32];
    scrypt::scrypt(passphrase.as_bytes(), &salt, &params, &mut secret).unwrap();
    let sealed = crypto_secretbox::XSalsa20Poly1305::new(&secret.into())
        .encrypt(nonce.into(), der.as_ref())
        .unwrap();
    let body = json!({
        "kdf": {"name": "scrypt", "params": {"N": 32768, "r": 8, "p": 1}, "salt": B64.encode(salt)},
        "cipher": {"name": "nacl/secretbox", "nonce": B64.encode(nonce)},
        "ciphertext": B64.encode(sealed),
    });
    let pem = pem_block(
        "ENCRYPTED SIGSTORE PRIVATE KEY",
        body.to_string().as_bytes(),
    );
    let (private, passphrase_file, public) = (
        dir.path().join("cosign.key"),
        dir.path().join("passphrase"),
        dir.path().join("cosign.pub"),
    );
    std::fs::write(&private, pem).unwrap();
    std::fs::write(&passphrase_file, passphrase).unwrap();
    let spki = key.public_key().as_der().unwrap();
    std::fs::write(&public, pem_block("PUBLIC KEY", spki.as_ref())).unwrap();
    KeyPair {
        _dir: dir,
        private,
        passphrase: passphrase_file,
        public,
        key,
    }
}

/// A PEM block of `label` around `bytes`.
fn pem_block(label: &str, bytes: &[u8]) -> String {
    let text = B64.encode(bytes);
    let lines: Vec<&str> = (0..text.len())
        .step_by(64)
        .map(|i| &text[i..(i + 64).min(text.len())])
        .collect();
    format!(
        "-----BEGIN {label}-----\n{}\n-----END {label}-----\n",
        lines.join("\n")
    )
}

/// `skopeo copy --all` of `src` to `dst`, signed with `keys`' private key
/// (`--sign-by-sigstore-private-key`, the passphrase from its file): `Err` with skopeo's
/// error when it fails.
fn skopeo_sign(keys: &KeyPair, src: &str, dst: &str) -> Result<(), String> {
    let out = Command::new("skopeo")
        .args(["--insecure-policy", "copy", "--all", "--preserve-digests"])
        .args(["--src-tls-verify=false", "--dest-tls-verify=false"])
        .arg("--sign-by-sigstore-private-key")
        .arg(&keys.private)
        .arg("--sign-passphrase-file")
        .arg(&keys.passphrase)
        .arg(src)
        .arg(dst)
        .stdin(Stdio::null())
        .output()
        .expect("skopeo runs (apt-get install skopeo)");
    match out.status.success() {
        true => Ok(()),
        false => Err(String::from_utf8_lossy(&out.stderr).into_owned()),
    }
}

/// Uploads `bytes` as a blob of `repo` and returns its descriptor.
fn push_blob(registry: &Registry, repo: &str, media_type: &str, bytes: &[u8]) -> Value {
    let digest = sha256_digest(bytes);
    registry.upload_blob("signatures", repo, &digest, bytes);
    json!({"mediaType": media_type, "digest": digest, "size": bytes.len()})
}

/// Puts an OCI manifest holding `layers` (their descriptors) at `repo:tag`, with a config
/// listing them as containers/image writes for sigstore attachments.
fn push_attachment(registry: &Registry, repo: &str, tag: &str, layers: Vec<Value>) {
    let diff_ids: Vec<&Value> = layers.iter().map(|l| &l["digest"]).collect();
    let config = json!({"architecture": "", "os": "", "config": {}, "rootfs": {"type": "layers", "diff_ids": diff_ids}});
    let config = push_blob(
        registry,
        repo,
        "application/vnd.oci.image.config.v1+json",
        config.to_string().as_bytes(),
    );
    let manifest = json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": config,
        "layers": layers,
    });
    let url = registry.url(&format!("/v2/{repo}/manifests/{tag}"));
    let resp = registry
        .client()
        .put(url)
        .header("Content-Type", "application/vnd.oci.image.manifest.v1+json")
        .body(manifest.to_string())
        .send()
        .unwrap();
    assert_eq!(
        resp.status().as_u16(),
        201,
        "manifest {tag}: {}",
        resp.text().unwrap_or_default()
    );
}

/// Signs `digest` of `repo` with `keys` as containers/image's sigstore signer writes it: a
/// simple-signing payload naming the digest and `identity`, ECDSA over its SHA-256 (ASN.1),
/// in the `dev.cosignproject.cosign/signature` annotation of a layer of the `.sig` tag.
pub(crate) fn sign(registry: &Registry, repo: &str, digest: &str, identity: &str, keys: &KeyPair) {
    let payload = json!({
        "critical": {
            "identity": {"docker-reference": identity},
            "image": {"docker-manifest-digest": digest},
            "type": "cosign container image signature",
        },
        "optional": {"creator": "imgcheck tests"},
    })
    .to_string();
    let signature = keys
        .key
        .sign(&SystemRandom::new(), payload.as_bytes())
        .unwrap();
    let mut layer = push_blob(registry, repo, SIMPLE_SIGNING, payload.as_bytes());
    layer["annotations"] = json!({"dev.cosignproject.cosign/signature": B64.encode(signature)});
    push_attachment(
        registry,
        repo,
        &format!("{}.sig", digest.replace(':', "-")),
        vec![layer],
    );
}

/// What skopeo 1.9 (containers/image) decides for a pull of `reference` under a policy that
/// requires sigstore signatures by `public` (`sigstoreSigned`, `keyPath`) and reads them from
/// the registry (`use-sigstore-attachments`): `Ok` when it copies the image, else its error.
fn skopeo_admits(reference: &str, public: &Path) -> Result<(), String> {
    let dir = tempfile::tempdir().unwrap();
    let policy = json!({
        "default": [{"type": "reject"}],
        "transports": {"docker": {"": [{
            "type": "sigstoreSigned",
            "keyPath": public,
            "signedIdentity": {"type": "matchRepoDigestOrExact"},
        }]}},
    });
    std::fs::write(dir.path().join("policy.json"), policy.to_string()).unwrap();
    let registries_d = dir.path().join("registries.d");
    std::fs::create_dir(&registries_d).unwrap();
    std::fs::write(
        registries_d.join("default.yaml"),
        "default-docker:\n  use-sigstore-attachments: true\n",
    )
    .unwrap();
    let out = Command::new("skopeo")
        .arg("--policy")
        .arg(dir.path().join("policy.json"))
        .arg("--registries.d")
        .arg(&registries_d)
        .args(["copy", "--src-tls-verify=false"])
        .arg(format!("docker://{reference}"))
        .arg(format!("dir:{}", dir.path().join("copy").display()))
        .stdin(Stdio::null())
        .output()
        .expect("skopeo runs");
    match out.status.success() {
        true => Ok(()),
        false => Err(String::from_utf8_lossy(&out.stderr).into_owned()),
    }
}

/// Attests `digest` of `repo` as cosign does: a DSSE envelope around an in-toto statement
/// whose subject is `subject` (the digest itself, or another to make a wrong one), signed by
/// `keys` over its pre-authentication encoding, as a layer of the `.att` tag.
pub(crate) fn attest(registry: &Registry, repo: &str, digest: &str, subject: &str, keys: &KeyPair) {
    let (alg, hex) = subject.split_once(':').unwrap();
    let statement = json!({
        "_type": "https://in-toto.io/Statement/v0.1",
        "predicateType": "https://slsa.dev/provenance/v0.2",
        "subject": [{"name": format!("{}/{repo}", registry.host()), "digest": {alg: hex}}],
        "predicate": {"builder": {"id": "imgcheck tests"}},
    })
    .to_string();
    let pae = format!(
        "DSSEv1 {} {IN_TOTO} {} {statement}",
        IN_TOTO.len(),
        statement.len()
    );
    let sig = keys.key.sign(&SystemRandom::new(), pae.as_bytes()).unwrap();
    let envelope = json!({
        "payloadType": IN_TOTO,
        "payload": B64.encode(&statement),
        "signatures": [{"keyid": "", "sig": B64.encode(sig)}],
    });
    let mut layer = push_blob(registry, repo, DSSE, envelope.to_string().as_bytes());
    layer["annotations"] = json!({"predicateType": "https://slsa.dev/provenance/v0.2", "dev.cosignproject.cosign/signature": ""});
    push_attachment(
        registry,
        repo,
        &format!("{}.att", digest.replace(':', "-")),
        vec![layer],
    );
}

/// The fixture `good` in `csi:v1`: its index and the entries the default policy's hosts pull,
/// each with the host that pulls it (`index` for the list).
pub(crate) fn good_release(registry: &Registry) -> Vec<(&'static str, String)> {
    let top = registry.push_layout(&fixture("good"), "csi", "v1");
    let (_, index) = registry.get_manifest("csi", "v1");
    let index: Value = serde_json::from_slice(&index).unwrap();
    let entry = |os_version: &str| {
        let m = index["manifests"].as_array().unwrap().iter().find(|m| {
            let p = &m["platform"];
            p["architecture"] == "amd64" && p["os.version"].as_str().unwrap_or("") == os_version
        });
        m.unwrap()["digest"].as_str().unwrap().to_string()
    };
    vec![
        ("index", top),
        ("linux/amd64", entry("")),
        ("windows/amd64:10.0.17763", entry("10.0.17763.5830")),
        ("windows/amd64:10.0.20348", entry("10.0.20348.2461")),
    ]
}

/// `imgcheck verify --format json ARGS REF`: its exit code and JSON report.
pub(crate) fn verify(args: &[&str], reference: &str) -> (i32, Value) {
    let mut argv = vec!["verify", "--format", "json"];
    argv.extend_from_slice(args);
    argv.push(reference);
    let out = run_imgcheck(&argv);
    (out.status.code().unwrap(), json_of(&out))
}

/// The signature findings of the one image of `report`: (rule, digest, message).
fn signature_findings(report: &Value) -> Vec<(String, String, String)> {
    let findings = report["images"][0]["findings"].as_array().unwrap();
    findings
        .iter()
        .filter(|f| {
            f["rule"].as_str().unwrap().contains("signature") || f["rule"] == "attestation-missing"
        })
        .map(|f| {
            let s = |k: &str| f[k].as_str().unwrap_or("").to_string();
            (s("rule"), s("digest"), s("message"))
        })
        .collect()
}

/// The `signatures` block of the one image of `report`: (entry, signed, attested) per manifest.
fn standings(report: &Value) -> Vec<(String, String, String)> {
    let block = report["images"][0]["signatures"].as_array().unwrap();
    block
        .iter()
        .map(|e| {
            let s = |k: &str| e[k].as_str().unwrap().to_string();
            (s("entry"), s("signed"), s("attested"))
        })
        .collect()
}

/// The Done-when line: a list whose index and entries are all signed and attested passes;
/// one Windows entry left unsigned and unattested fails, naming that entry alone, while the
/// arm64 entry no host pulls needs nothing. skopeo (containers/image) finds a signature for
/// exactly the manifests imgcheck does.
#[test]
fn an_unsigned_windows_entry_fails_naming_it_and_a_signed_release_passes() {
    let registry = Registry::start();
    let release = good_release(&registry);
    let keys = key_pair("correct horse");
    let identity = format!("{}/csi:v1", registry.host());
    let reference = format!("{}/csi:v1", registry.host());
    let public = keys.public.to_str().unwrap();
    let (unsigned_host, unsigned) = release[3].clone();
    for (_, digest) in &release[..3] {
        sign(&registry, "csi", digest, &identity, &keys);
        attest(&registry, "csi", digest, digest, &keys);
    }
    let (code, report) = verify(&["--signatures", "--key", public], &reference);
    assert_eq!(code, 1, "{report:#}");
    let found = signature_findings(&report);
    let rules: Vec<&str> = found.iter().map(|(r, _, _)| r.as_str()).collect();
    assert_eq!(
        rules,
        ["signature-missing", "attestation-missing"],
        "{found:#?}"
    );
    for (_, digest, message) in &found {
        assert_eq!(digest, &unsigned);
        assert!(
            message.starts_with(&format!("{unsigned_host} ({unsigned})")),
            "{message}"
        );
    }
    let want = |last: &str| {
        let mut rows: Vec<(String, String, String)> = (release.iter())
            .map(|(e, _)| (e.to_string(), "verified".into(), "verified".into()))
            .collect();
        rows[3] = (unsigned_host.to_string(), last.into(), last.into());
        rows
    };
    assert_eq!(standings(&report), want("missing"));
    crate::schema::assert_conforms("imagesReport", "verify --signatures", &report);
    assert!(
        !report
            .to_string()
            .contains(&std::fs::read_to_string(&keys.public).unwrap())
    );
    // containers/image finds a signature where imgcheck does (and then stops: Debian's build
    // cannot check one).
    for (entry, digest) in &release[1..] {
        let err = skopeo_admits(&format!("{}/csi@{digest}", registry.host()), &keys.public)
            .expect_err("Debian's skopeo admits no sigstore-signed image");
        let absent = err.contains("no signature exists");
        assert_eq!(absent, digest == &unsigned, "{entry}: {err}");
        assert!(
            absent || err.contains("sigstore disabled"),
            "{entry}: {err}"
        );
    }
    sign(&registry, "csi", &unsigned, &identity, &keys);
    attest(&registry, "csi", &unsigned, &unsigned, &keys);
    let (code, report) = verify(&["--signatures", "--key", public], &reference);
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(standings(&report), want("verified"));
    crate::schema::assert_conforms("imagesReport", "verify --signatures", &report);
    assert_eq!(
        report["images"][0]["signatures"][0]["identity"],
        identity.as_str()
    );
}

/// Signatures made with another key are `signature-invalid` under `--key`, and so is one
/// whose payload is malformed or signs another digest, with or without a key (a finding, not
/// a crash); an attestation about another digest is none. Without a key, the policy key
/// `signatures: {required: true, attestations: false}` turns the check on and passes
/// signatures that are there and about their manifest, unverified.
#[test]
fn signatures_by_another_key_or_malformed_are_invalid() {
    let registry = Registry::start();
    let release = good_release(&registry);
    let (ours, theirs) = (key_pair("a"), key_pair("b"));
    let identity = format!("{}/csi:v1", registry.host());
    let reference = format!("{}/csi:v1", registry.host());
    for (_, digest) in &release[1..] {
        sign(&registry, "csi", digest, &identity, &theirs);
        attest(&registry, "csi", digest, &release[0].1, &ours);
    }
    // The index: a payload that is not JSON, its signature not base64.
    let mut junk = push_blob(&registry, "csi", SIMPLE_SIGNING, b"\xff not json");
    junk["annotations"] = json!({"dev.cosignproject.cosign/signature": "%%%"});
    push_attachment(
        &registry,
        "csi",
        &format!("{}.sig", release[0].1.replace(':', "-")),
        vec![junk],
    );
    let (code, report) = verify(&["--key", ours.public.to_str().unwrap()], &reference);
    assert_eq!(code, 1, "{report:#}");
    let found = signature_findings(&report);
    let invalid: Vec<&str> = (found.iter())
        .filter(|(r, _, _)| r == "signature-invalid")
        .map(|(_, d, _)| d.as_str())
        .collect();
    let all: Vec<&str> = release.iter().map(|(_, d)| d.as_str()).collect();
    assert_eq!(invalid, all, "{found:#?}");
    let message = |digest: &str| {
        let f = found
            .iter()
            .find(|(r, d, _)| r == "signature-invalid" && d == digest);
        f.unwrap().2.clone()
    };
    assert!(
        message(all[0]).contains("not a simple-signing document"),
        "{found:#?}"
    );
    assert!(
        message(all[3]).contains("made with none of the 1 keys given"),
        "{found:#?}"
    );
    let attestations = found.iter().filter(|(r, _, _)| r == "attestation-missing");
    assert_eq!(attestations.count(), 4, "{found:#?}");
    assert!(
        found
            .iter()
            .any(|(_, _, m)| m.contains("is about other subjects")),
        "{found:#?}"
    );

    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy.yaml");
    let text = "name: signed\nlinux:\n  architectures: [amd64]\n  runtimes: [cri-o]\nwindows:\n  architectures: [amd64]\n  builds: [17763, 20348]\nruntimes: [containerd-2.0]\nsignatures:\n  required: true\n  attestations: false\n";
    std::fs::write(&policy, text).unwrap();
    let (code, report) = verify(&["--policy", policy.to_str().unwrap()], &reference);
    assert_eq!(code, 1, "{report:#}");
    let found = signature_findings(&report);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(
        (found[0].0.as_str(), found[0].1.as_str()),
        ("signature-invalid", all[0])
    );
    let rows = standings(&report);
    let entries: Vec<(&str, &str)> = rows
        .iter()
        .map(|(_, s, a)| (s.as_str(), a.as_str()))
        .collect();
    assert_eq!(
        entries,
        [
            ("invalid", "not-required"),
            ("unverified", "not-required"),
            ("unverified", "not-required"),
            ("unverified", "not-required")
        ]
    );
}

/// The limit behind this file's signer: Debian's skopeo 1.9.3 refuses to sign with a sigstore
/// key (a Debian-local patch of containers/image). When this fails, skopeo can sign: sign the
/// releases above with it (the key here is already in cosign's format).
#[test]
fn debian_skopeo_has_sigstore_disabled() {
    let registry = Registry::start();
    registry.push_layout(&fixture("good"), "csi", "v1");
    let keys = key_pair("correct horse");
    let (src, dst) = (
        registry.docker_ref("csi", "v1"),
        registry.docker_ref("csi", "signed"),
    );
    let err = skopeo_sign(&keys, &src, &dst).expect_err("Debian's skopeo 1.9.3 cannot sign");
    assert!(err.contains("sigstore disabled"), "{err}");
}
