//! Issue 35, item 1: would a Linux node's CRI-O admit each pull under the cluster's signature
//! policy? `verify --signature-policy` against Debian's Distribution 2.8, with signatures
//! written where containers/image reads them (the `.sig` tag of the repository pulled from;
//! the helpers of `signatures.rs`), and Debian's skopeo 1.9.3 run on the same policy.json and
//! registries.d where it can decide: `insecureAcceptAnything`, `reject`, and a
//! `sigstoreSigned` scope with no signature there ("no signature exists"). Where a signature
//! is there, Debian's containers/image has sigstore disabled (a Debian-local patch) and says
//! so instead of deciding: those verdicts (other key, identity, `remapIdentity`) are compared
//! with containers/image's code (`signature/policy_eval_sigstore.go`,
//! `policy_reference_match.go`), not with the binary.

use std::path::PathBuf;
use std::process::{Command, Stdio};

use serde_json::{Value, json};
use tempfile::TempDir;

use crate::common::Registry;
use crate::signatures::{KeyPair, good_release, key_pair, sign, verify};

/// A node's policy.json and registries.d (attachments read everywhere).
struct NodeConfig {
    dir: TempDir,
}

impl NodeConfig {
    fn new(policy: Value) -> NodeConfig {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("policy.json"), policy.to_string()).unwrap();
        std::fs::create_dir(dir.path().join("registries.d")).unwrap();
        std::fs::write(
            dir.path().join("registries.d/default.yaml"),
            "default-docker:\n  use-sigstore-attachments: true\n",
        )
        .unwrap();
        NodeConfig { dir }
    }

    fn policy(&self) -> PathBuf {
        self.dir.path().join("policy.json")
    }

    fn registries_d(&self) -> PathBuf {
        self.dir.path().join("registries.d")
    }

    /// `verify --signature-policy … --registries-d … REF`: exit code and report.
    fn verify(&self, reference: &str) -> (i32, Value) {
        let (p, d) = (self.policy(), self.registries_d());
        let args = [
            "--signature-policy",
            p.to_str().unwrap(),
            "--registries-d",
            d.to_str().unwrap(),
        ];
        verify(&args, reference)
    }

    /// What skopeo (containers/image) does pulling `reference` as a Linux node does (one
    /// image, the instance for this system): `Ok` when it copies, else its error.
    fn skopeo(&self, reference: &str) -> Result<(), String> {
        self.skopeo_through(reference, None)
    }

    /// [`NodeConfig::skopeo`], the node's mirrors read from `registries_conf` when given.
    fn skopeo_through(
        &self,
        reference: &str,
        registries_conf: Option<&std::path::Path>,
    ) -> Result<(), String> {
        let mut skopeo = Command::new("skopeo");
        if let Some(conf) = registries_conf {
            skopeo.arg("--registries-conf").arg(conf);
        }
        let out = skopeo
            .arg("--policy")
            .arg(self.policy())
            .arg("--registries.d")
            .arg(self.registries_d())
            .args(["--override-os", "linux", "--override-arch", "amd64"])
            .args(["copy", "--src-tls-verify=false"])
            .arg(format!("docker://{reference}"))
            .arg(format!("dir:{}", self.dir.path().join("copy").display()))
            .stdin(Stdio::null())
            .output()
            .expect("skopeo runs (apt-get install skopeo)");
        let _ = std::fs::remove_dir_all(self.dir.path().join("copy"));
        match out.status.success() {
            true => Ok(()),
            false => Err(String::from_utf8_lossy(&out.stderr).into_owned()),
        }
    }
}

/// The docker scope `scope` requiring sigstore signatures by `keys` with `identity`.
fn sigstore_policy(scope: &str, keys: &KeyPair, identity: Value) -> Value {
    json!({
        "default": [{"type": "reject"}],
        "transports": {"docker": {scope: [{
            "type": "sigstoreSigned",
            "keyPath": keys.public,
            "signedIdentity": identity,
        }]}},
    })
}

/// The `admissions` block of the one image: (hosts, decision, looked_in, reason).
fn admissions(report: &Value) -> Vec<(String, String, String, String)> {
    let block = report["images"][0]["admissions"].as_array();
    let s = |e: &Value, k: &str| e[k].as_str().unwrap_or("").to_string();
    (block.into_iter().flatten())
        .map(|e| {
            let row = (s(e, "hosts"), s(e, "decision"));
            (row.0, row.1, s(e, "looked_in"), s(e, "reason"))
        })
        .collect()
}

/// The `signature-rejected` messages of the one image.
fn rejected(report: &Value) -> Vec<String> {
    let findings = report["images"][0]["findings"].as_array().unwrap();
    (findings.iter())
        .filter(|f| f["rule"] == "signature-rejected")
        .map(|f| f["message"].as_str().unwrap().to_string())
        .collect()
}

/// Signed, unsigned, other key: the Linux entry's signature decides (not the list's), the
/// Windows entries are never judged; skopeo agrees where it can decide.
#[test]
fn the_linux_entrys_signature_decides_and_skopeo_agrees_when_none_is_there() {
    let registry = Registry::start();
    let release = good_release(&registry);
    let (ours, theirs) = (key_pair("a"), key_pair("b"));
    let reference = format!("{}/csi:v1", registry.host());
    let node = NodeConfig::new(sigstore_policy(
        &registry.host(),
        &ours,
        json!({"type": "matchRepoDigestOrExact"}),
    ));
    // Only the list is signed: a Linux pull is refused (the instance is checked).
    sign(&registry, "csi", &release[0].1, &reference, &ours);
    let (code, report) = node.verify(&reference);
    assert_eq!(code, 1, "{report:#}");
    let rows = admissions(&report);
    assert_eq!(rows.len(), 1, "{rows:?}");
    let (hosts, decision, looked_in, reason) = &rows[0];
    assert_eq!(
        (hosts.as_str(), decision.as_str()),
        ("linux/amd64", "rejected")
    );
    assert_eq!(looked_in, &format!("{}/csi", registry.host()));
    assert!(reason.starts_with("none there"), "{reason}");
    let message = &rejected(&report)[0];
    for part in [
        "Linux nodes (CRI-O)",
        "sigstoreSigned",
        &release[1].1,
        "scope transports.docker",
    ] {
        assert!(message.contains(part), "{part}: {message}");
    }
    crate::schema::assert_conforms("imagesReport", "verify --signature-policy", &report);
    let err = node.skopeo(&reference).expect_err("skopeo refuses it too");
    assert!(err.contains("no signature exists"), "{err}");
    // The Linux entry signed with another key.
    sign(&registry, "csi", &release[1].1, &reference, &theirs);
    let (code, report) = node.verify(&reference);
    assert_eq!(code, 1, "{report:#}");
    assert!(admissions(&report)[0].3.contains("other key"), "{report:#}");
    let err = node
        .skopeo(&reference)
        .expect_err("Debian's skopeo decides no sigstore");
    assert!(err.contains("sigstore disabled"), "{err}");
    // Signed with ours: admitted.
    sign(&registry, "csi", &release[1].1, &reference, &ours);
    let (code, report) = node.verify(&reference);
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(admissions(&report)[0].1, "admitted");
    assert!(rejected(&report).is_empty());
}

/// `reject` and `insecureAcceptAnything` scopes: imgcheck's prediction equals what skopeo
/// does, with the most specific scope winning.
#[test]
fn reject_and_insecure_accept_anything_scopes_decide_as_skopeo_does() {
    let registry = Registry::start();
    good_release(&registry);
    let host = registry.host();
    let node = NodeConfig::new(json!({
        "default": [{"type": "insecureAcceptAnything"}],
        "transports": {"docker": {
            host.clone(): [{"type": "reject"}],
            format!("{host}/csi"): [{"type": "insecureAcceptAnything"}],
            format!("{host}/blocked"): [{"type": "reject"}],
            format!("{host}/gpg"): [{"type": "signedBy", "keyType": "GPGKeys", "keyPath": "/k.gpg"}],
        }},
    }));
    registry.push_layout(&crate::common::fixture("good"), "blocked", "v1");
    registry.push_layout(&crate::common::fixture("good"), "other", "v1");
    for (repo, admitted, scope) in [
        ("csi", true, format!("{host}/csi")),
        ("blocked", false, format!("{host}/blocked")),
        ("other", false, host.clone()),
    ] {
        let reference = format!("{host}/{repo}:v1");
        let (code, report) = node.verify(&reference);
        let skopeo = node.skopeo(&reference);
        assert_eq!(skopeo.is_ok(), admitted, "{repo}: {skopeo:?}");
        assert_eq!(code, if admitted { 0 } else { 1 }, "{repo}: {report:#}");
        let entry = &report["images"][0]["admissions"][0];
        assert_eq!(
            entry["scope"],
            format!("transports.docker[{scope:?}]"),
            "{repo}"
        );
        if !admitted {
            assert!(skopeo.unwrap_err().contains("rejected"), "{repo}");
            assert_eq!(entry["requirement"], "reject");
        }
    }
    // GPG is not predicted: a warning, never a pass claim.
    registry.push_layout(&crate::common::fixture("good"), "gpg", "v1");
    let (code, report) = node.verify(&format!("{host}/gpg:v1"));
    assert_eq!(code, 0, "{report:#}");
    let entry = &report["images"][0]["admissions"][0];
    assert_eq!(entry["decision"], "not-predicted");
    let findings = report["images"][0]["findings"].as_array().unwrap();
    let warned = findings
        .iter()
        .find(|f| f["rule"] == "signature-not-predicted");
    assert_eq!(warned.unwrap()["severity"], "warning", "{report:#}");
}

/// An image copied to another repository and pulled by that name: its signatures name the
/// source, so `matchRepoDigestOrExact` refuses it and `remapIdentity` (prefix: the mirror,
/// signedPrefix: the source) admits it; the signature is looked for where it is pulled from.
#[test]
fn remap_identity_admits_a_copy_pulled_by_the_mirrors_name() {
    let registry = Registry::start();
    let release = good_release(&registry);
    let host = registry.host();
    registry.push_layout(&crate::common::fixture("good"), "mirror/csi", "v1");
    let keys = key_pair("k");
    let source = format!("{host}/csi:v1");
    sign(&registry, "mirror/csi", &release[1].1, &source, &keys);
    let mirror = format!("{host}/mirror/csi:v1");
    let exact = NodeConfig::new(sigstore_policy(
        &format!("{host}/mirror"),
        &keys,
        json!({"type": "matchRepoDigestOrExact"}),
    ));
    let (code, report) = exact.verify(&mirror);
    assert_eq!(code, 1, "{report:#}");
    let (_, decision, looked_in, reason) = &admissions(&report)[0];
    assert_eq!(decision, "rejected");
    assert_eq!(looked_in, &format!("{host}/mirror/csi"));
    assert!(reason.contains("identity mismatch"), "{reason}");
    let remap = NodeConfig::new(sigstore_policy(
        &format!("{host}/mirror"),
        &keys,
        json!({"type": "remapIdentity", "prefix": format!("{host}/mirror"), "signedPrefix": host}),
    ));
    let (code, report) = remap.verify(&mirror);
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(admissions(&report)[0].1, "admitted");
    // The source repository has no signature of its own: refused there.
    let (code, report) = remap.verify(&source);
    assert_eq!(code, 1, "{report:#}");
}

/// A ClusterImagePolicy rendered as MCO renders it: its scope needs the key; bad input is
/// exit 2 naming the file, and the key never shows.
#[test]
fn a_cluster_image_policy_is_rendered_and_bad_policies_are_exit_2() {
    let registry = Registry::start();
    let release = good_release(&registry);
    let keys = key_pair("k");
    let reference = format!("{}/csi:v1", registry.host());
    let pem = std::fs::read_to_string(&keys.public).unwrap();
    let data = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, &pem);
    let dir = tempfile::tempdir().unwrap();
    let cip = dir.path().join("cip.yaml");
    let yaml = format!(
        "apiVersion: config.openshift.io/v1\nkind: ClusterImagePolicy\nmetadata:\n  name: csi\nspec:\n  scopes: [\"{reference}\"]\n  policy:\n    rootOfTrust:\n      policyType: PublicKey\n      publicKey:\n        keyData: {data}\n"
    );
    std::fs::write(&cip, yaml).unwrap();
    let args = ["--image-policy", cip.to_str().unwrap()];
    let (code, report) = verify(&args, &reference);
    assert_eq!(code, 1, "{report:#}");
    assert!(
        admissions(&report)[0].3.starts_with("none there"),
        "{report:#}"
    );
    sign(&registry, "csi", &release[1].1, &reference, &keys);
    let (code, report) = verify(&args, &reference);
    assert_eq!(code, 0, "{report:#}");
    assert!(!report.to_string().contains(pem.lines().nth(1).unwrap()));
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, r#"{"default":[{"type":"magic"}]}"#).unwrap();
    let out = crate::common::run_imgcheck(&[
        "verify",
        "--signature-policy",
        bad.to_str().unwrap(),
        &reference,
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad.json") && err.contains("magic"), "{err}");
    let alone = [
        "verify",
        "--registries-d",
        dir.path().to_str().unwrap(),
        &reference,
    ];
    assert_eq!(crate::common::run_imgcheck(&alone).status.code(), Some(2));
}

/// Through the mirror plan: CRI-O pulls the source's name from its mirror and reads the
/// signature there. Signed at the source only, the pull is refused (the signature did not
/// travel) — skopeo, given the same registries.conf, refuses it too; signed at the mirror, it
/// is admitted. Windows nodes are not judged.
#[test]
fn mirror_check_looks_for_the_signature_in_the_mirror() {
    let registry = Registry::start();
    let release = good_release(&registry);
    let host = registry.host();
    registry.push_layout(&crate::common::fixture("good"), "mirror/csi", "v1");
    let keys = key_pair("k");
    let tagged = format!("{host}/csi:v1");
    sign(&registry, "csi", &release[1].1, &tagged, &keys);
    let node = NodeConfig::new(sigstore_policy(
        &format!("{host}/csi"),
        &keys,
        json!({"type": "matchRepoDigestOrExact"}),
    ));
    let conf = node.dir.path().join("registries.conf");
    std::fs::write(
        &conf,
        format!(
            "[[registry]]\nprefix = \"{host}/csi\"\nlocation = \"{host}/csi\"\n\
             [[registry.mirror]]\nlocation = \"{host}/mirror/csi\"\ninsecure = true\n"
        ),
    )
    .unwrap();
    let pinned = format!("{host}/csi@{}", release[0].1);
    let mirror_check = || {
        let (p, d) = (node.policy(), node.registries_d());
        let out = crate::common::run_imgcheck(&[
            "mirror-check",
            "--format",
            "json",
            "--os",
            "linux",
            "--registries-conf",
            conf.to_str().unwrap(),
            "--signature-policy",
            p.to_str().unwrap(),
            "--registries-d",
            d.to_str().unwrap(),
            &pinned,
        ]);
        (out.status.code().unwrap(), crate::common::json_of(&out))
    };
    let (code, report) = mirror_check();
    assert_eq!(code, 1, "{report:#}");
    let rows = admissions(&report);
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0].1, "rejected");
    assert_eq!(rows[0].2, format!("{host}/mirror/csi"));
    assert!(rows[0].3.starts_with("none there"), "{rows:?}");
    crate::schema::assert_conforms("imagesReport", "mirror-check --signature-policy", &report);
    let err = node
        .skopeo_through(&pinned, Some(&conf))
        .expect_err("skopeo refuses the pull through the mirror");
    assert!(err.contains("no signature exists"), "{err}");
    // Straight from the source (verify), the signature is there.
    let (code, report) = node.verify(&pinned);
    assert_eq!(
        (code, admissions(&report)[0].1.as_str()),
        (0, "admitted"),
        "{report:#}"
    );
    // The signature copied to the mirror: admitted there too.
    sign(&registry, "mirror/csi", &release[1].1, &tagged, &keys);
    let (code, report) = mirror_check();
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(admissions(&report)[0].1, "admitted");
}

/// An OCI layout is not what a node pulls: the policy's scopes and the signatures it reads
/// belong to a registry's repository. Asked to judge one, the check cannot run: exit 3 with a
/// `fetch-error` saying so — never a PASS with the policy silently unapplied.
#[test]
fn a_layout_under_a_signature_policy_is_not_a_pass() {
    let node = NodeConfig::new(json!({"default": [{"type": "reject"}]}));
    let layout = format!("oci:{}/fixtures/layouts/good", env!("CARGO_MANIFEST_DIR"));
    let policy = node.policy();
    let out = crate::common::imgcheck()
        .args(["verify", "--format", "json", "--signature-policy"])
        .arg(&policy)
        .arg(&layout)
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).expect("a JSON report");
    assert_eq!(out.status.code(), Some(3), "{report:#}");
    let findings = report["images"][0]["findings"].as_array().unwrap();
    assert!(
        findings.iter().any(|f| f["rule"] == "fetch-error"
            && f["message"].as_str().unwrap().contains("push the release")),
        "{report:#}"
    );
}

/// Before mirroring (`--pre`) or without the network (`--plan`), a mirror configuration means
/// the nodes' pulls, and the signatures CRI-O reads, are the mirror's, which these runs do not
/// read: a signature policy there is refused (exit 2, naming both flags), not silently unused.
#[test]
fn a_signature_policy_is_refused_where_the_mirror_is_not_read() {
    let node = NodeConfig::new(json!({"default": [{"type": "reject"}]}));
    let idms = node.dir.path().join("idms.yaml");
    std::fs::write(
        &idms,
        "apiVersion: config.openshift.io/v1\nkind: ImageDigestMirrorSet\nmetadata: {name: a}\n\
         spec:\n  imageDigestMirrors:\n  - source: quay.io/example\n    mirrors: [mirror.example/example]\n",
    )
    .unwrap();
    for flag in ["--pre", "--plan"] {
        let out = crate::common::imgcheck()
            .args(["mirror-check", flag, "--idms"])
            .arg(&idms)
            .arg("--signature-policy")
            .arg(node.policy())
            .arg("quay.io/example/driver@sha256:0000000000000000000000000000000000000000000000000000000000000000")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flag}: {err}");
        assert!(
            err.contains(flag) && err.contains("--signature-policy"),
            "{flag}: {err}"
        );
    }
}
