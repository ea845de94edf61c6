//! Issue 35, item 3: `mirror-check` reports the cosign signatures and attestations that did not
//! travel with the image (`mirror-signature-missing`). A Linux node (CRI-O, containers/image)
//! reads an image's sigstore signatures from the repository it pulls from — the mirror — so a
//! signature left at the source fails every pull a signature policy guards there.
//!
//! The source and the mirror are two real `docker-registry` instances; the source is signed
//! and attested as containers/image and cosign store it (the helpers of `signatures.rs`); the
//! mirror is filled with `skopeo copy --all --preserve-digests`, which copies no cosign tag
//! unless registries.d turns `use-sigstore-attachments` on (as oc-mirror v2 does), and then
//! copies the `.sig` signatures only — never the `.att` attestations.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::common::{Registry, fixture, json_of, run_imgcheck, skopeo_copy_all};
use crate::signatures::{attest, key_pair, sign};

const REPO: &str = "csi";

/// A signed and attested release at the source (`csi:v1`, the fixture `good`: its index and
/// every entry), an empty mirror, and an ImageDigestMirrorSet sending the source registry to
/// `mirror/` on the mirror.
struct Mirrored {
    source: Registry,
    mirror: Registry,
    dir: tempfile::TempDir,
    /// The index's digest.
    index: String,
    /// Every manifest of the release: the index, then each entry.
    manifests: Vec<String>,
}

impl Mirrored {
    fn new() -> Mirrored {
        let source = Registry::start();
        let index = source.push_layout(&fixture("good"), REPO, "v1");
        let (_, body) = source.get_manifest(REPO, "v1");
        let list: Value = serde_json::from_slice(&body).expect("index JSON");
        let entries = list["manifests"].as_array().expect("manifests").iter();
        let mut manifests = vec![index.clone()];
        manifests.extend(entries.map(|m| m["digest"].as_str().expect("digest").to_string()));
        let keys = key_pair("mirror");
        let identity = format!("{}/{REPO}:v1", source.host());
        for digest in &manifests {
            sign(&source, REPO, digest, &identity, &keys);
            attest(&source, REPO, digest, digest, &keys);
        }
        let dir = tempfile::tempdir().expect("tempdir");
        Mirrored {
            source,
            mirror: Registry::start(),
            dir,
            index,
            manifests,
        }
    }

    /// The IDMS file.
    fn idms(&self) -> PathBuf {
        let path = self.dir.path().join("idms.yaml");
        let text = format!(
            "apiVersion: config.openshift.io/v1\nkind: ImageDigestMirrorSet\nmetadata: {{name: m}}\n\
             spec:\n  imageDigestMirrors:\n  - source: {}\n    mirrors: [{}/mirror]\n",
            self.source.host(),
            self.mirror.host()
        );
        std::fs::write(&path, text).expect("write idms");
        path
    }

    /// The release pinned by digest at the source.
    fn reference(&self) -> String {
        format!("{}/{REPO}@{}", self.source.host(), self.index)
    }

    /// `skopeo copy --all --preserve-digests` of the release to the mirror: no cosign tag.
    fn copy_image(&self) {
        skopeo_copy_all(
            &self.source.docker_ref(REPO, "v1"),
            &self.mirror.docker_ref(&format!("mirror/{REPO}"), "v1"),
        );
    }

    /// Copies the `sha256-<hex>.<suffix>` tag of every manifest to the mirror, as
    /// `cosign copy` does (a manifest like any other).
    fn copy_tags(&self, suffix: &str) {
        for digest in &self.manifests {
            let tag = format!("{}.{suffix}", digest.replace(':', "-"));
            skopeo_copy_all(
                &self.source.docker_ref(REPO, &tag),
                &self.mirror.docker_ref(&format!("mirror/{REPO}"), &tag),
            );
        }
    }

    /// `mirror-check --os linux --idms … REF` with `args`: the exit code and the report.
    fn check(&self, args: &[&str]) -> (i32, Value) {
        let idms = self.idms();
        let reference = self.reference();
        let mut argv = vec![
            "mirror-check",
            "--format",
            "json",
            "--os",
            "linux",
            "--idms",
        ];
        argv.push(idms.to_str().expect("utf-8 path"));
        argv.extend_from_slice(args);
        argv.push(&reference);
        let out = run_imgcheck(&argv);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("panicked"), "{stderr}");
        (out.status.code().expect("exit code"), json_of(&out))
    }
}

/// With `--signatures` the mirror passes (exit 0): only the two attestations are missing, as
/// warnings (no tool copies `.att`).
fn only_attestations_missing(m: &Mirrored) {
    let (code, report) = m.check(&["--signatures"]);
    assert_eq!(code, 0, "{report:#}");
    let found = missing(&report);
    assert_eq!(found.len(), 2, "{found:#?}");
    assert!(
        found.iter().all(|f| f.3.contains("attestation")),
        "{found:#?}"
    );
}

/// The `mirror-signature-missing` findings of the one image of `report`: (severity, digest,
/// nodes, message).
fn missing(report: &Value) -> Vec<(String, String, String, String)> {
    let findings = report["images"][0]["findings"]
        .as_array()
        .expect("findings");
    findings
        .iter()
        .filter(|f| f["rule"] == "mirror-signature-missing")
        .map(|f| {
            let s = |k: &str| f[k].as_str().unwrap_or("").to_string();
            (s("severity"), s("digest"), s("nodes"), s("message"))
        })
        .collect()
}

/// The digest the policy's Linux host (linux/amd64) pulls from the release.
fn linux_entry(m: &Mirrored) -> String {
    let (_, body) = m.source.get_manifest(REPO, "v1");
    let list: Value = serde_json::from_slice(&body).expect("index JSON");
    let entries = list["manifests"].as_array().expect("manifests");
    let linux = entries
        .iter()
        .find(|e| e["platform"]["os"] == "linux" && e["platform"]["architecture"] == "amd64");
    linux.expect("a linux/amd64 entry")["digest"]
        .as_str()
        .expect("digest")
        .to_string()
}

/// `skopeo copy --all` leaves every cosign tag at the source: the index's and the Linux
/// entry's signatures and attestations did not travel (warnings: the policy does not require
/// signatures; an error with `--signatures`, which fails the gate). The Windows entries are not
/// named: Windows nodes (containerd) enforce no signature policy. Copying the `.sig` tags too
/// clears the signatures (and with them the error), the `.att` tags the attestations.
#[test]
fn signatures_left_at_the_source_are_missing_from_the_mirror_until_copied() {
    let m = Mirrored::new();
    m.copy_image();
    let entry = linux_entry(&m);
    let (code, report) = m.check(&[]);
    assert_eq!(code, 0, "{report:#}");
    let found = missing(&report);
    let rows: Vec<(&str, &str, &str)> = (found.iter())
        .map(|(s, d, n, _)| (s.as_str(), d.as_str(), n.as_str()))
        .collect();
    assert_eq!(
        rows,
        [
            ("warning", m.index.as_str(), "linux"),
            ("warning", entry.as_str(), "linux"),
            ("warning", m.index.as_str(), "linux"),
            ("warning", entry.as_str(), "linux"),
        ],
        "{found:#?}"
    );
    let mirror_repo = format!("{}/mirror/{REPO}", m.mirror.host());
    assert!(found[1].3.contains("signature"), "{found:#?}");
    assert!(found[1].3.contains(&mirror_repo), "{found:#?}");
    assert!(found[1].3.contains("CRI-O"), "{found:#?}");
    assert!(found[3].3.contains("attestation"), "{found:#?}");
    crate::schema::assert_conforms("imagesReport", "mirror-check signatures", &report);

    let (code, report) = m.check(&["--signatures"]);
    assert_eq!(code, 1, "{report:#}");
    let severities: Vec<String> = missing(&report).into_iter().map(|f| f.0).collect();
    assert_eq!(severities, ["error", "error", "warning", "warning"]);

    m.copy_tags("sig");
    only_attestations_missing(&m);

    m.copy_tags("att");
    let (code, report) = m.check(&["--signatures"]);
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(missing(&report), []);
}

/// `--disconnected`: the source is not asked, so nothing can be compared; under
/// `--signatures` the mirror must still hold a signature for the index and the Linux entry.
#[test]
fn disconnected_checks_the_mirror_holds_signatures_when_they_are_required() {
    let m = Mirrored::new();
    m.copy_image();
    let (code, report) = m.check(&["--disconnected"]);
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(missing(&report), []);
    let (code, report) = m.check(&["--disconnected", "--signatures"]);
    assert_eq!(code, 1, "{report:#}");
    let found = missing(&report);
    assert_eq!(found.len(), 2, "{found:#?}");
    assert!(found[0].3.contains("--disconnected"), "{found:#?}");
    m.copy_tags("sig");
    let (code, report) = m.check(&["--disconnected", "--signatures"]);
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(missing(&report), []);
}

/// oc-mirror v2 copies signatures by giving containers/image a registries.d that turns
/// `use-sigstore-attachments` on for each registry (`registriesd.PrepareRegistrydCustomDir`);
/// containers/image then rewrites each `.sig` manifest in the mirror (same payloads and
/// annotations, a new config: another manifest digest) and copies no `.att`. The signatures
/// count as travelled; the attestations do not.
#[test]
fn signatures_copied_by_containers_image_count_though_their_manifest_is_rewritten() {
    let m = Mirrored::new();
    let registries_d = m.dir.path().join("registries.d");
    std::fs::create_dir(&registries_d).expect("mkdir");
    std::fs::write(
        registries_d.join("default.yaml"),
        "default-docker:\n  use-sigstore-attachments: true\n",
    )
    .expect("write registries.d");
    skopeo_with_signatures(
        &registries_d,
        &m.source.docker_ref(REPO, "v1"),
        &m.mirror.docker_ref(&format!("mirror/{REPO}"), "v1"),
    );
    let tag = format!("{}.sig", m.index.replace(':', "-"));
    let (status, _) = m.mirror.get_manifest(&format!("mirror/{REPO}"), &tag);
    assert_eq!(status, 200, "skopeo copied the index's .sig tag");
    only_attestations_missing(&m);
}

/// `skopeo copy --all --preserve-digests SRC DST` reading and writing sigstore attachments
/// (`--registries.d DIR`).
fn skopeo_with_signatures(registries_d: &Path, src: &str, dst: &str) {
    let out = Command::new("skopeo")
        .arg("--insecure-policy")
        .arg("--registries.d")
        .arg(registries_d)
        .args(["copy", "--all", "--preserve-digests"])
        .args(["--src-tls-verify=false", "--dest-tls-verify=false"])
        .arg(src)
        .arg(dst)
        .stdin(Stdio::null())
        .output()
        .expect("skopeo runs (apt-get install skopeo)");
    assert!(
        out.status.success(),
        "skopeo copy with signatures: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}
