//! `verify --deep` on hostile Windows layers, streamed from a real registry (and from a layout):
//! entries hidden in a second gzip member, names climbing out of `Files/`, a zstd bomb under
//! `--timeout`, bytes that do not hash to the layer's digest, and foreign layers, which are
//! not fetched and are reported as not checked. And the program an entry starts, found in
//! real layers as the kernel, runc and containerd's CRI find it (issue 33, items 8–10).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::common::proxy::{Fault, FaultProxy, Match, Rule};
use crate::common::{Registry, fixture, imgcheck, openshift_without_linux_deep, sha256_digest};
use serde_json::{Value, json};

const TAR: &str = "application/vnd.oci.image.layer.v1.tar";
const TAR_GZIP: &str = "application/vnd.oci.image.layer.v1.tar+gzip";
const TAR_ZSTD: &str = "application/vnd.oci.image.layer.v1.tar+zstd";

const POLICY: &str = "name: win\nwindows:\n  architectures: [amd64]\n  builds: [17763]\nruntimes: [containerd-1.7]\n";

/// A tar stream of one-byte files named as given (no checks on the names); `end` adds the
/// end-of-archive marker.
fn tar_of(names: &[&str], end: bool) -> Vec<u8> {
    let mut out = Vec::new();
    for name in names {
        let mut h = tar::Header::new_ustar();
        h.as_mut_bytes()[..name.len()].copy_from_slice(name.as_bytes());
        h.set_size(1);
        h.set_mode(0o644);
        h.set_entry_type(tar::EntryType::Regular);
        h.set_cksum();
        out.extend_from_slice(h.as_bytes());
        out.extend_from_slice(&[b'x'; 512]);
    }
    if end {
        out.extend_from_slice(&[0; 1024]);
    }
    out
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(bytes).unwrap();
    enc.finish().unwrap()
}

/// A zstd frame: a raw block holding a tar header for a 1 TiB `Files/big`, then `blocks`
/// RLE blocks of 128 KiB of zeros, 4 bytes each.
fn zstd_bomb(blocks: usize) -> Vec<u8> {
    let mut header = tar::Header::new_gnu();
    header.set_path("Files/big").unwrap();
    header.set_size(1 << 40);
    header.set_cksum();
    let block = |kind: u32, size: u32, last: bool| {
        ((size << 3) | (kind << 1) | u32::from(last)).to_le_bytes()[..3].to_vec()
    };
    let mut out = vec![0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x38];
    out.extend(block(0, 512, false));
    out.extend_from_slice(header.as_bytes());
    for i in 0..blocks {
        out.extend(block(1, 128 * 1024, i + 1 == blocks));
        out.push(0);
    }
    out
}

fn write_blob(layout: &Path, bytes: &[u8]) -> Value {
    let digest = sha256_digest(bytes);
    let dir = layout.join("blobs/sha256");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(digest.trim_start_matches("sha256:")), bytes).unwrap();
    json!({"digest": digest, "size": bytes.len()})
}

/// A layer: media type, bytes, and a `urls` entry that makes it foreign (its bytes left out).
type LayerSpec<'a> = (&'a str, Vec<u8>, Option<&'a str>);

/// An OCI layout `DIR/layouts/NAME` holding a list with one Windows image (ltsc2019) whose
/// layers are `layers`.
fn windows_layout(dir: &Path, name: &str, layers: &[LayerSpec<'_>]) -> PathBuf {
    let platform = json!({"architecture": "amd64", "os": "windows", "os.version": "10.0.17763.1"});
    layout_of(dir, name, platform, json!({}), layers)
}

/// An OCI layout `DIR/layouts/NAME` holding a list with one image of `platform` (also its
/// config's), run settings `run` and layers `layers`.
fn layout_of(
    dir: &Path,
    name: &str,
    platform: Value,
    run: Value,
    layers: &[LayerSpec<'_>],
) -> PathBuf {
    let layout = dir.join("layouts").join(name);
    std::fs::create_dir_all(&layout).unwrap();
    std::fs::write(
        layout.join("oci-layout"),
        r#"{"imageLayoutVersion":"1.0.0"}"#,
    )
    .unwrap();
    let mut descriptors = Vec::new();
    let mut diff_ids = Vec::new();
    for (media_type, bytes, url) in layers {
        let mut d = match url {
            None => write_blob(&layout, bytes),
            Some(_) => json!({"digest": sha256_digest(bytes), "size": bytes.len()}),
        };
        d["mediaType"] = json!(media_type);
        if let Some(url) = url {
            d["urls"] = json!([url]);
        }
        descriptors.push(d);
        diff_ids.push(sha256_digest(bytes));
    }
    let mut config = platform.clone();
    config["rootfs"] = json!({"type": "layers", "diff_ids": diff_ids});
    config["config"] = run;
    let mut config_d = write_blob(&layout, config.to_string().as_bytes());
    config_d["mediaType"] = json!("application/vnd.oci.image.config.v1+json");
    let manifest = json!({
        "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": config_d, "layers": descriptors
    });
    let mut manifest_d = write_blob(&layout, manifest.to_string().as_bytes());
    manifest_d["mediaType"] = json!("application/vnd.oci.image.manifest.v1+json");
    manifest_d["platform"] = platform;
    let index = json!({
        "schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": [manifest_d]
    });
    let mut index_d = write_blob(&layout, index.to_string().as_bytes());
    index_d["mediaType"] = json!("application/vnd.oci.image.index.v1+json");
    index_d["annotations"] = json!({"org.opencontainers.image.ref.name": "v1"});
    let top = json!({"schemaVersion": 2, "manifests": [index_d]});
    std::fs::write(layout.join("index.json"), top.to_string()).unwrap();
    layout
}

/// Runs `verify --deep` on `reference` and waits at most `limit` for it (killing it after).
fn verify_deep(dir: &Path, reference: &str, extra: &[&str], limit: Duration) -> (i32, Value) {
    let policy = dir.join("policy.yaml");
    std::fs::write(&policy, POLICY).unwrap();
    let mut command = imgcheck();
    command.args(["verify", reference, "--deep", "--format", "json"]);
    if !extra.contains(&"--retries") {
        command.args(["--retries", "0"]);
    }
    if !extra.contains(&"--policy") {
        command.arg("--policy").arg(&policy);
    }
    let mut child = command
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("imgcheck runs");
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > limit {
            child.kill().unwrap();
            panic!("{reference}: still running after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    let doc = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{reference}: not JSON ({e}): {stderr}"));
    (out.status.code().expect("exit code"), doc)
}

fn findings(doc: &Value) -> Vec<(String, String)> {
    doc["images"][0]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let s = |k: &str| f[k].as_str().unwrap_or_default().to_string();
            (s("rule"), s("message"))
        })
        .collect()
}

const MINUTE: Duration = Duration::from_secs(60);
const MIB: usize = 1024 * 1024;

/// Layers whose every entry looks fine to a reader that stops too early or compares names
/// as written: each must fail `windows-layer-format`, from a registry and from a layout.
#[test]
fn hidden_and_escaping_entries_are_found() {
    let dir = tempfile::tempdir().unwrap();
    let registry = Registry::start();
    let cases = [
        (
            "second-member",
            TAR_GZIP,
            [
                gzip(&tar_of(&["Files", "Files/a.exe"], false)),
                gzip(&tar_of(&["csi.exe"], true)),
            ]
            .concat(),
            "csi.exe",
        ),
        (
            "dot-dot",
            TAR,
            tar_of(&["Files", "Files/../../x"], true),
            "Files/../../x",
        ),
    ];
    for (name, media_type, bytes, culprit) in cases {
        let layout = windows_layout(dir.path(), name, &[(media_type, bytes, None)]);
        registry.push_layout(&layout, name, "v1");
        for reference in [
            format!("{}/{name}:v1", registry.host()),
            format!("oci:{}:v1", layout.display()),
        ] {
            let (code, doc) = verify_deep(dir.path(), &reference, &[], MINUTE);
            assert_eq!(code, 1, "{reference}: {doc:#}");
            let found = findings(&doc);
            assert!(
                found
                    .iter()
                    .any(|(r, m)| r == "windows-layer-format" && m.contains(culprit)),
                "{reference}: {found:?}"
            );
        }
    }
}

/// A zstd layer expanding to 32 GiB from 1 MiB (a tar entry claiming 1 TiB of zeros): the run
/// ends within `--timeout` (or at the expansion cap), never passes, and says why.
#[test]
fn a_zstd_bomb_ends_at_the_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let registry = Registry::start();
    let layout = windows_layout(
        dir.path(),
        "bomb",
        &[(TAR_ZSTD, zstd_bomb(256 * 1024), None)],
    );
    registry.push_layout(&layout, "bomb", "v1");
    let reference = format!("{}/bomb:v1", registry.host());
    let started = Instant::now();
    let (code, doc) = verify_deep(dir.path(), &reference, &["--timeout", "3s"], MINUTE);
    let took = started.elapsed();
    assert_ne!(doc["images"][0]["verdict"], "pass", "{doc:#}");
    assert!(code == 1 || code == 3, "exit {code}: {doc:#}");
    let found = findings(&doc);
    assert!(
        found
            .iter()
            .any(|(_, m)| m.contains("--timeout") || m.contains("expands past")),
        "{found:?}"
    );
    // Generous for a loaded machine, far below the minutes the bomb takes to expand.
    assert!(took < Duration::from_secs(30), "took {took:?}");
}

/// Issue 22, item 3: `--timeout` bounds the work on an OCI layout too. A zstd layer in a
/// layout expanding to 128 GiB, 36 MiB with a 32 MiB skippable frame in front, so that its cap
/// (2048x, 72 GiB) is far more than libzstd decodes in the 2 s (an 8 GiB cap it reaches in
/// under 2 s): `--timeout 2s` ends the run within seconds, not checked (exit 3), the message
/// naming the deadline.
#[test]
fn a_zstd_bomb_in_a_layout_ends_at_the_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let padding = 32 * MIB;
    let mut layer = vec![0x50, 0x2a, 0x4d, 0x18];
    layer.extend((padding as u32).to_le_bytes());
    layer.resize(8 + padding, 0);
    layer.extend(zstd_bomb(1024 * 1024));
    let layout = windows_layout(dir.path(), "bomb", &[(TAR_ZSTD, layer, None)]);
    let reference = format!("oci:{}:v1", layout.display());
    let started = Instant::now();
    let (code, doc) = verify_deep(dir.path(), &reference, &["--timeout", "2s"], 4 * MINUTE);
    let took = started.elapsed();
    assert_eq!(code, 3, "{doc:#}");
    assert_ne!(doc["images"][0]["verdict"], "pass", "{doc:#}");
    let found = findings(&doc);
    assert!(
        found.iter().any(|(_, m)| m.contains("--timeout")),
        "{found:?}"
    );
    assert!(took < Duration::from_secs(15), "took {took:?}");
}

/// A registry serving other bytes for a layer, every entry in the layout all the same, and the
/// same length: a digest mismatch, never a pass.
#[test]
fn a_layer_that_does_not_hash_to_its_digest_fails() {
    let dir = tempfile::tempdir().unwrap();
    let registry = Registry::start();
    let good = tar_of(&["Files", "Files/a.exe"], true);
    let layout = windows_layout(dir.path(), "mismatch", &[(TAR, good.clone(), None)]);
    registry.push_layout(&layout, "mismatch", "v1");
    let mut other = good.clone();
    other[512 + 512 + 512] = b'y'; // a file's data byte
    registry.corrupt_blob(&sha256_digest(&good), &other);
    let (code, doc) = verify_deep(
        dir.path(),
        &format!("{}/mismatch:v1", registry.host()),
        &[],
        MINUTE,
    );
    assert_eq!(code, 1, "{doc:#}");
    let found = findings(&doc);
    assert!(
        found
            .iter()
            .any(|(r, m)| r == "digest-mismatch" && m.contains(&sha256_digest(&good))),
        "{found:?}"
    );
}

/// Foreign layers are not fetched: `--deep` says each was not checked (a warning; the image
/// still passes), and checks the layers it can fetch.
#[test]
fn foreign_layers_are_reported_as_not_checked() {
    let dir = tempfile::tempdir().unwrap();
    let registry = Registry::start();
    let foreign = gzip(&tar_of(&["Files", "Files/base.dll"], true));
    let own = gzip(&tar_of(&["Files", "Files/app.exe"], true));
    let layout = windows_layout(
        dir.path(),
        "foreign",
        &[
            (
                "application/vnd.docker.image.rootfs.foreign.diff.tar.gzip",
                foreign.clone(),
                Some("https://mcr.microsoft.com/v2/windows/blobs/x"),
            ),
            (TAR_GZIP, own, None),
        ],
    );
    registry.push_layout(&layout, "foreign", "v1");
    let (code, doc) = verify_deep(
        dir.path(),
        &format!("{}/foreign:v1", registry.host()),
        &[],
        MINUTE,
    );
    assert_eq!(code, 0, "{doc:#}");
    let found = findings(&doc);
    let not_checked: Vec<_> = found
        .iter()
        .filter(|(r, _)| r == "layer-not-checked")
        .collect();
    assert_eq!(not_checked.len(), 1, "{found:?}");
    assert!(not_checked[0].1.contains(&sha256_digest(&foreign)));
    // The shipped fixture too (two Windows images sharing foreign base layers).
    registry.push_layout(&fixture("foreign-layer"), "fixture", "v1");
    let policy = openshift_without_linux_deep(dir.path());
    let (code, doc) = verify_deep(
        dir.path(),
        &format!("{}/fixture:v1", registry.host()),
        &["--policy", &policy],
        MINUTE,
    );
    assert_eq!(code, 0, "{doc:#}");
    let rules: Vec<String> = doc["images"][0]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["rule"].as_str().unwrap().to_string())
        .collect();
    assert!(rules.iter().any(|r| r == "layer-not-checked"), "{doc:#}");
}

/// A layer body that breaks off half-way is asked for again and the bytes already checked
/// are skipped (the image passes, one retry); bytes damaged on the way or a registry naming
/// other bytes in `Docker-Content-Digest` are a digest mismatch, never a pass.
#[test]
fn streamed_layers_resume_and_are_checked_on_the_way() {
    let dir = tempfile::tempdir().unwrap();
    let registry = Registry::start();
    // About 2 MiB of files that do not compress, so the body comes in many pieces.
    let mut names = vec!["Files".to_string()];
    let mut data = Vec::new();
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for i in 0..64 {
        names.push(format!("Files/f{i}"));
        let bytes: Vec<u8> = (0..32 * 1024)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        data.push(bytes);
    }
    let mut b = tar::Builder::new(Vec::new());
    for (name, bytes) in names.iter().skip(1).zip(&data) {
        let mut h = tar::Header::new_gnu();
        h.set_size(bytes.len() as u64);
        b.append_data(&mut h, name, &bytes[..]).unwrap();
    }
    let layer = gzip(&b.into_inner().unwrap());
    let digest = sha256_digest(&layer);
    let layout = windows_layout(dir.path(), "resume", &[(TAR_GZIP, layer, None)]);
    registry.push_layout(&layout, "resume", "v1");
    let on_layer = || Match::PathContains(digest.clone());

    let proxy = FaultProxy::start(
        &registry.base_url(),
        vec![Rule::times(on_layer(), Fault::Truncate, 1)],
    );
    let reference = format!("{}/resume:v1", proxy.host());
    let (code, doc) = verify_deep(dir.path(), &reference, &["--retries", "2"], MINUTE);
    assert_eq!(code, 0, "{doc:#}");
    assert_eq!(proxy.faults_injected(), 1);

    for fault in [Fault::FlipByte, Fault::LyingDigestHeader] {
        proxy.set_rules(vec![Rule::always(on_layer(), fault.clone())]);
        let (code, doc) = verify_deep(dir.path(), &reference, &["--retries", "1"], MINUTE);
        assert_eq!(code, 1, "{fault:?}: {doc:#}");
        let found = findings(&doc);
        assert!(
            found
                .iter()
                .any(|(r, m)| r == "digest-mismatch" && m.contains(&digest)),
            "{fault:?}: {found:?}"
        );
    }
}

/// One entry of a hand-made layer: a file (bytes, mode), a symbolic or a hard link.
enum Item<'a> {
    File(&'a str, &'a [u8], u32),
    Symlink(&'a str, &'a str),
    Hardlink(&'a str, &'a str),
}

/// A tar layer of `items`, in order.
fn layer_of(items: &[Item<'_>]) -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    for item in items {
        let mut h = tar::Header::new_gnu();
        match item {
            Item::File(name, data, mode) => {
                h.set_size(data.len() as u64);
                h.set_mode(*mode);
                b.append_data(&mut h, name, *data).unwrap();
            }
            Item::Symlink(name, target) | Item::Hardlink(name, target) => {
                let kind = match item {
                    Item::Symlink(..) => tar::EntryType::Symlink,
                    _ => tar::EntryType::Link,
                };
                h.set_entry_type(kind);
                h.set_size(0);
                h.set_mode(0o777);
                b.append_link(&mut h, name, target).unwrap();
            }
        }
    }
    b.into_inner().unwrap()
}

/// An ELF64 little-endian executable header (gABI "ELF Header") for `e_machine`.
fn elf(machine: u16) -> Vec<u8> {
    let mut h = vec![0u8; 64];
    h[..7].copy_from_slice(b"\x7fELF\x02\x01\x01");
    h[16] = 2;
    h[18..20].copy_from_slice(&machine.to_le_bytes());
    h[20] = 1;
    h[52] = 64;
    h
}

/// The headers of a PE32+ AMD64 console program without imports (Microsoft, "PE Format":
/// MS-DOS header, `e_lfanew`, the signature, the COFF header, the PE32+ optional header).
fn pe_amd64() -> Vec<u8> {
    let mut pe = b"MZ".to_vec();
    pe.resize(0x3c, 0);
    pe.extend(0x40u32.to_le_bytes());
    pe.extend(b"PE\0\0");
    pe.extend(0x8664u16.to_le_bytes());
    pe.extend([0u8; 14]);
    pe.extend(240u16.to_le_bytes());
    pe.extend(0x22u16.to_le_bytes());
    let mut optional = [0u8; 240];
    optional[..2].copy_from_slice(&0x20bu16.to_le_bytes());
    optional[68..70].copy_from_slice(&3u16.to_le_bytes());
    optional[108..112].copy_from_slice(&16u32.to_le_bytes());
    pe.extend(optional);
    pe
}

/// Issue 33, items 8–10, on real layers from a layout, under the default reading of Linux
/// entries (the policy names no `deep:`): what the kernel, runc and containerd's CRI decide
/// (`docs/images.md`, "The entry's program"), one row per rule, the rule and a piece of the
/// message each must give (no finding: `""`).
#[test]
fn the_program_is_found_as_the_runtime_finds_it() {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("both.yaml");
    std::fs::write(
        &policy,
        "name: both\nlinux:\n  architectures: [amd64, arm64]\n  runtimes: [containerd-2.3]\n\
         windows:\n  architectures: [amd64]\n  builds: [17763]\nruntimes: [containerd-1.7]\n",
    )
    .unwrap();
    let policy = policy.to_string_lossy().into_owned();
    let linux = |arch: &str| json!({"architecture": arch, "os": "linux"});
    let windows = json!({"architecture": "amd64", "os": "windows", "os.version": "10.0.17763.1"});
    let (amd64, pe) = (elf(62), pe_amd64());
    let entry = |path: &str| json!({ "Entrypoint": [path] });
    let one = |items: &[Item<'_>]| vec![layer_of(items)];
    type ProgramRow = (
        &'static str,
        Value,
        Value,
        Vec<Vec<u8>>,
        Option<(&'static str, &'static str)>,
    );
    let rows: Vec<ProgramRow> = vec![
        (
            "arm64 entry holding an amd64 build (read by default)",
            linux("arm64"),
            entry("/driver"),
            one(&[Item::File("driver", &amd64, 0o755)]),
            Some(("binary-platform-mismatch", "arm64 needs")),
        ),
        (
            "a 0644 entrypoint",
            linux("amd64"),
            entry("/driver"),
            one(&[Item::File("driver", &amd64, 0o644)]),
            Some(("entrypoint-missing", "mode 0644")),
        ),
        (
            "a symbolic link loop: ELOOP, not layer-not-checked",
            linux("amd64"),
            entry("/a"),
            one(&[Item::Symlink("a", "b"), Item::Symlink("b", "a")]),
            Some(("entrypoint-missing", "ELOOP")),
        ),
        (
            "a hard link keeps the inode it linked",
            linux("amd64"),
            entry("/driver"),
            vec![
                layer_of(&[
                    Item::File("opt/real", &amd64, 0o755),
                    Item::Hardlink("driver", "opt/real"),
                ]),
                layer_of(&[Item::File("opt/real", b"#!/nowhere\n", 0o755)]),
            ],
            None,
        ),
        (
            "Windows Entrypoint [\"\"] with a Cmd runs the Cmd",
            windows.clone(),
            json!({"Entrypoint": [""], "Cmd": ["C:\\app\\driver.exe"]}),
            one(&[Item::File("Files/app/driver.exe", &pe, 0o755)]),
            None,
        ),
        (
            "a #! script is no Windows program",
            windows.clone(),
            entry("C:\\entry.sh"),
            one(&[Item::File("Files/entry.sh", b"#!/bin/sh\n", 0o755)]),
            Some(("binary-platform-mismatch", "not a Windows PE executable")),
        ),
        (
            "a Windows hard link into a folder the lookup does not read",
            windows.clone(),
            entry("C:\\app\\driver.exe"),
            one(&[
                Item::File("Files/store/x/driver.exe", &pe, 0o755),
                Item::Hardlink("Files/app/driver.exe", "Files/store/x/driver.exe"),
            ]),
            None,
        ),
    ];
    for (i, (what, platform, run, layers, want)) in rows.into_iter().enumerate() {
        let specs: Vec<LayerSpec<'_>> = layers.into_iter().map(|l| (TAR, l, None)).collect();
        let layout = layout_of(dir.path(), &format!("p{i}"), platform, run, &specs);
        let reference = format!("oci:{}:v1", layout.display());
        let (code, doc) = verify_deep(dir.path(), &reference, &["--policy", &policy], MINUTE);
        // The program's rules only (a one-platform list is also no-match on other hosts).
        let program_rules = [
            "entrypoint-missing",
            "binary-platform-mismatch",
            "dll-missing",
            "layer-not-checked",
            "windows-layer-format",
        ];
        let found: Vec<(String, String)> = findings(&doc)
            .into_iter()
            .filter(|(r, _)| program_rules.contains(&r.as_str()))
            .collect();
        match want {
            None => assert!(found.is_empty(), "{what}: {found:?}"),
            Some((rule, text)) => {
                assert_eq!(code, 1, "{what}: {found:?}");
                assert!(
                    found.iter().any(|(r, m)| r == rule && m.contains(text)),
                    "{what}: {found:?}"
                );
            }
        }
    }
}
