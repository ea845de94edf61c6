//! `imgcheck build` end to end: the real Debian Buildah (vfs storage, chroot isolation, as root)
//! builds a small multi-stage image for linux/amd64 and Windows 17763 and 20348 against a real
//! `docker-registry`; plus `--check` and `--dry-run` on the real plan in `buildah/`.
//!
//! The Linux builder base is busybox-static (`buildah from scratch` + `buildah copy` +
//! `buildah commit`), and the Windows bases are the Windows children of `fixtures/layouts/good`
//! (os=windows, os.version set, `Files/` + `Hives/` layers), pushed to the test registry.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use crate::common::proxy::{Fault, FaultProxy, Match, Rule};
use crate::common::{self, Registry, fixture, imgcheck, skopeo_copy_all};
use serde_json::Value;

const STORAGE: [&str; 2] = ["--storage-driver", "vfs"];

/// Fails the test, naming what to install, when `tool` is not on PATH.
fn require(tool: &str, package: &str) {
    let found = std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(tool).is_file()));
    assert!(
        found,
        "{tool} not found: install it with 'apt-get install {package}' (or run scripts/test)"
    );
}

fn run(cmd: &mut Command) -> Output {
    let shown = format!("{cmd:?}");
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {shown}: {e}"));
    assert!(
        out.status.success(),
        "{shown} failed ({}):\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn buildah() -> Command {
    let mut c = Command::new("buildah");
    c.args(STORAGE);
    c
}

fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Removes, when dropped, the images Buildah pulled from one test registry into its (shared)
/// local storage, so test runs do not pile up images.
struct PulledImages(String);

/// A plan-shaped Windows build set up in `reg`: the builder image and the Windows bases
/// pushed, a plan written in a work directory; the images Buildah pulled are removed at the
/// end (before the registry stops: fields drop in order).
struct WindowsBuild {
    _cleanup: PulledImages,
    reg: Registry,
    work: tempfile::TempDir,
    bases: Vec<(u16, String, String)>,
    plan: PathBuf,
}

fn windows_build(reg: Registry) -> WindowsBuild {
    require("buildah", "buildah");
    let work = tempfile::tempdir().unwrap();
    let builder = push_builder(&reg, work.path());
    let bases = push_windows_bases(&reg);
    let plan = write_plan(&work.path().join("plan"), &builder, &bases, "");
    WindowsBuild {
        _cleanup: PulledImages(reg.host()),
        reg,
        work,
        bases,
        plan,
    }
}

impl Drop for PulledImages {
    fn drop(&mut self) {
        let Ok(out) = buildah()
            .args(["images", "--format", "{{.Name}}:{{.Tag}}"])
            .output()
        else {
            return;
        };
        let names: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| l.starts_with(&format!("{}/", self.0)))
            .map(String::from)
            .collect();
        for name in names {
            let _ = buildah().args(["rmi", &name]).output();
        }
    }
}

/// A busybox-static Linux image pushed as `REG/test/builder:latest`: the builder stage of the
/// test Containerfiles (it has `sh`, `mkdir`, `cat`, `echo`).
fn push_builder(reg: &Registry, work: &Path) -> String {
    require("buildah", "buildah");
    let busybox = Path::new("/bin/busybox");
    assert!(
        busybox.is_file(),
        "/bin/busybox not found: install it with 'apt-get install busybox-static'"
    );
    let root = work.join("rootfs");
    fs::create_dir_all(root.join("bin")).unwrap();
    fs::create_dir_all(root.join("tmp")).unwrap();
    fs::copy(busybox, root.join("bin/busybox")).unwrap();
    for applet in ["sh", "mkdir", "cat", "echo", "ls", "true", "false", "sleep"] {
        std::os::unix::fs::symlink("busybox", root.join("bin").join(applet)).unwrap();
    }
    let out = run(buildah().args(["from", "scratch"]));
    let container = String::from_utf8_lossy(&out.stdout).trim().to_string();
    run(buildah()
        .args(["copy", &container])
        .arg(format!("{}/", root.display()))
        .arg("/"));
    run(buildah().args([
        "config",
        "--os",
        "linux",
        "--arch",
        "amd64",
        "--env",
        "PATH=/bin",
        "--cmd",
        "/bin/sh",
        &container,
    ]));
    let local = format!("localhost/imgcheck-test/builder-{}", reg.port());
    run(buildah().args(["commit", "--rm", &container, &local]));
    let pushed = format!("{}/test/builder:latest", reg.host());
    run(buildah().args([
        "push",
        "--tls-verify=false",
        &local,
        &format!("docker://{pushed}"),
    ]));
    let _ = buildah().args(["rmi", &local]).output();
    pushed
}

/// The Windows children of `good` as `REG/windows/nanoserver:ltsc2019` and `:ltsc2022`.
/// Returns (reference, manifest digest) per build.
fn push_windows_bases(reg: &Registry) -> Vec<(u16, String, String)> {
    require("skopeo", "skopeo");
    reg.push_layout(&fixture("good"), "bases/good", "latest");
    let digests: Value =
        serde_json::from_slice(&fs::read(common::fixtures_dir().join("digests.json")).unwrap())
            .unwrap();
    let children = &digests["good"]["children"];
    let mut out = Vec::new();
    for (build, key, tag) in [
        (17763, "windows/amd64:10.0.17763.5830", "ltsc2019"),
        (20348, "windows/amd64:10.0.20348.2461", "ltsc2022"),
    ] {
        let digest = children[key].as_str().unwrap().to_string();
        let base = format!("{}/windows/nanoserver:{tag}", reg.host());
        skopeo_copy_all(
            &format!("docker://{}/bases/good@{digest}", reg.host()),
            &format!("docker://{base}"),
        );
        out.push((build, base, digest));
    }
    out
}

const WINDOWS_CONTAINERFILE: &str = r#"# Test image: the Linux stage "cross-compiles" (writes) the .exe, the Windows stage only COPYs.
ARG BUILDER
ARG WINDOWS_BASE
FROM --platform=linux/amd64 ${BUILDER} AS builder
ARG TARGETARCH
ARG OSVERSION
COPY version.txt pe-header.bin /src/
RUN mkdir -p /out && cat /src/pe-header.bin > /out/csi.exe && \
    echo "csi.exe for windows/${TARGETARCH} ${OSVERSION} $(cat /src/version.txt)" >> /out/csi.exe

FROM ${WINDOWS_BASE}
COPY --from=builder /out/csi.exe /csi.exe
USER ContainerAdministrator
ENV CSI_MODE=node
LABEL org.example.stage="windows stage"
ENTRYPOINT ["/csi.exe"]
"#;

const LINUX_CONTAINERFILE: &str = r#"ARG BUILDER
FROM ${BUILDER} AS builder
ARG TARGETARCH
COPY version.txt elf-header.bin /src/
RUN mkdir -p /out && cat /src/elf-header.bin > /out/csi && \
    echo "csi for linux/${TARGETARCH} $(cat /src/version.txt)" >> /out/csi && chmod 755 /out/csi

FROM ${BUILDER}
COPY --from=builder /out/csi /csi
ENTRYPOINT ["/csi"]
"#;

/// The headers of a PE32+ AMD64 console program with no sections and no imports (Microsoft's
/// "PE Format": MS-DOS header with `e_lfanew` at 0x3c, the PE signature, the COFF file header,
/// the PE32+ optional header with 16 data directories): what the "cross-compiled" csi.exe starts
/// with, so `verify --deep` (which the build runs) reads a Windows program.
fn pe_header() -> Vec<u8> {
    let mut pe = b"MZ".to_vec();
    pe.resize(0x3c, 0);
    pe.extend(0x40u32.to_le_bytes());
    pe.extend(b"PE\0\0");
    for half in [0x8664u16, 0] {
        pe.extend(half.to_le_bytes()); // Machine AMD64, no sections
    }
    pe.extend([0u8; 12]); // time stamp, symbol table, symbol count
    pe.extend(240u16.to_le_bytes()); // SizeOfOptionalHeader
    pe.extend(0x22u16.to_le_bytes()); // executable, large-address aware
    let mut optional = [0u8; 240];
    optional[..2].copy_from_slice(&0x20bu16.to_le_bytes()); // PE32+
    optional[68..70].copy_from_slice(&3u16.to_le_bytes()); // console subsystem
    optional[108..112].copy_from_slice(&16u32.to_le_bytes()); // data directories
    pe.extend(optional);
    pe
}

/// An ELF64 little-endian x86-64 executable's header (gABI "ELF Header": class 2, data 1,
/// version 1, `e_type` 2, `e_machine` 62, `e_ehsize` 64): what the "built" Linux csi starts
/// with, so `verify --deep`, which reads Linux entries too, reads a linux/amd64 program.
fn elf_header() -> Vec<u8> {
    let fields: [&[u8]; 6] = [
        b"\x7fELF\x02\x01\x01",     // magic, ELFCLASS64, ELFDATA2LSB, EV_CURRENT
        &[0; 9],                    // e_ident padding
        &[2, 0, 62, 0, 1, 0, 0, 0], // e_type ET_EXEC, e_machine EM_X86_64, e_version
        &[0; 28],                   // entry, program and section header offsets, flags
        &[64, 0],                   // e_ehsize
        &[0; 10],                   // header table sizes and counts
    ];
    fields.concat()
}

/// Writes the test plan (one image, `driver`, plus optional extra YAML images) into `dir`.
fn write_plan(
    dir: &Path,
    builder: &str,
    bases: &[(u16, String, String)],
    extra_images: &str,
) -> PathBuf {
    fs::create_dir_all(dir.join("driver")).unwrap();
    fs::create_dir_all(dir.join("src")).unwrap();
    fs::write(dir.join("src/version.txt"), "v1.2.3-test\n").unwrap();
    fs::write(dir.join("src/pe-header.bin"), pe_header()).unwrap();
    fs::write(dir.join("src/elf-header.bin"), elf_header()).unwrap();
    fs::write(
        dir.join("driver/Containerfile.windows"),
        WINDOWS_CONTAINERFILE,
    )
    .unwrap();
    fs::write(dir.join("driver/Containerfile.linux"), LINUX_CONTAINERFILE).unwrap();
    let bases_yaml: String = bases
        .iter()
        .map(|(b, r, _)| format!("  {b}: {r}\n"))
        .collect();
    let plan = format!(
        "windows_bases:\n{bases_yaml}images:\n  - name: driver\n    context: ${{TEST_DRIVER_SRC}}\n    \
         containerfiles:\n      linux: driver/Containerfile.linux\n      windows: driver/Containerfile.windows\n    \
         build_args:\n      BUILDER: {builder}\n    linux:\n      architectures: [amd64]\n    \
         windows:\n      architectures: [amd64]\n      builds:\n        - build: 17763\n        - build: 20348\n    \
         policy: openshift\n{extra_images}"
    );
    let path = dir.join("images.yaml");
    fs::write(&path, plan).unwrap();
    path
}

fn build_cmd(plan: &Path, reg: &Registry, logs: &Path) -> Command {
    build_cmd_to(plan, &reg.host(), logs)
}

/// [`build_cmd`] pushing to `HOST/csi`.
fn build_cmd_to(plan: &Path, host: &str, logs: &Path) -> Command {
    let mut c = imgcheck();
    c.args(["--tls-verify=false", "build", "--plan"])
        .arg(plan)
        .args(["--push", &format!("{host}/csi")])
        .args([
            "--tag",
            "v1",
            "--storage-driver",
            "vfs",
            "--isolation",
            "chroot",
        ])
        .arg("--log-dir")
        .arg(logs)
        .env("TEST_DRIVER_SRC", plan.parent().unwrap().join("src"));
    c
}

fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}):\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

fn manifest(reg: &Registry, repo: &str, reference: &str) -> Value {
    let (status, body) = reg.get_manifest(repo, reference);
    assert_eq!(status, 200, "{repo}@{reference} not served");
    serde_json::from_slice(&body).unwrap()
}

fn layer_digests(m: &Value) -> Vec<String> {
    m["layers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["digest"].as_str().unwrap().to_string())
        .collect()
}

/// One entry of a gzip'd tar layer: name, PAX records, contents.
struct Entry {
    name: String,
    pax: BTreeMap<String, String>,
    bytes: Vec<u8>,
}

/// The entries of a gzip'd tar layer, and the sha256 of the uncompressed tar.
fn layer_entries(reg: &Registry, repo: &str, digest: &str) -> (Vec<Entry>, String) {
    let (status, blob) = reg.get_blob(repo, digest);
    assert_eq!(status, 200);
    let mut tar = Vec::new();
    flate2::read::GzDecoder::new(&blob[..])
        .read_to_end(&mut tar)
        .unwrap();
    let diff_id = format!("sha256:{}", hex_sha256(&tar));
    let mut archive = tar::Archive::new(&tar[..]);
    let mut out = Vec::new();
    for entry in archive.entries().unwrap() {
        let mut entry = entry.unwrap();
        let mut pax = BTreeMap::new();
        if let Some(records) = entry.pax_extensions().unwrap() {
            for r in records {
                let r = r.unwrap();
                pax.insert(r.key().unwrap().to_string(), r.value().unwrap().to_string());
            }
        }
        let name = entry.path().unwrap().display().to_string();
        let mut bytes = Vec::new();
        entry.read_to_end(&mut bytes).unwrap();
        out.push(Entry { name, pax, bytes });
    }
    (out, diff_id)
}

fn hex_sha256(bytes: &[u8]) -> String {
    use sha2::Digest as _;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The list's entries: (os/arch, os.version, digest).
fn list_entries(list: &Value) -> BTreeSet<(String, Option<String>, String)> {
    list["manifests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                format!(
                    "{}/{}",
                    e["platform"]["os"].as_str().unwrap(),
                    e["platform"]["architecture"].as_str().unwrap()
                ),
                e["platform"]["os.version"].as_str().map(String::from),
                e["digest"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// Checks one Windows child: the base's layers byte for byte, then one layer in the Windows
/// layer format holding what the Linux stage wrote; its diff_id in the config.
fn check_windows_child(reg: &Registry, base_digest: &str, child: &str, osversion: &str) {
    let base_layers = layer_digests(&manifest(reg, "bases/good", base_digest));
    let m = manifest(reg, "csi/driver", child);
    let layers = layer_digests(&m);
    assert_eq!(&layers[..base_layers.len()], &base_layers[..]);
    assert_eq!(layers.len(), base_layers.len() + 1);
    let top = layers.last().unwrap();
    let (entries, diff_id) = layer_entries(reg, "csi/driver", top);
    let names: Vec<&str> = entries.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(&names[..2], ["Hives/", "Files/"], "{names:?}");
    assert!(
        names
            .iter()
            .all(|n| n.starts_with("Files/") || *n == "Hives/"),
        "{names:?}"
    );
    for e in &entries {
        let keys: Vec<&str> = e.pax.keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "LIBARCHIVE.creationtime",
                "MSWINDOWS.fileattr",
                "MSWINDOWS.rawsd"
            ],
            "{}",
            e.name
        );
    }
    let exe = entries
        .iter()
        .find(|e| e.name == "Files/csi.exe")
        .unwrap_or_else(|| panic!("no Files/csi.exe in {top}: {names:?}"));
    let mut want = pe_header();
    want.extend(format!("csi.exe for windows/amd64 {osversion} v1.2.3-test\n").bytes());
    assert_eq!(exe.bytes, want);
    assert_eq!(exe.pax["MSWINDOWS.fileattr"], "32");
    let (_, config) = reg.get_blob("csi/driver", m["config"]["digest"].as_str().unwrap());
    let config: Value = serde_json::from_slice(&config).unwrap();
    let diff_ids = config["rootfs"]["diff_ids"].as_array().unwrap();
    assert_eq!(diff_ids.last().unwrap(), &Value::String(diff_id));
    assert_eq!(diff_ids.len(), layers.len());
}

/// GETs of the Windows bases' layer blobs from the bases' repository (Buildah pulling a base).
fn base_layer_downloads(reg: &Registry, bases: &[(u16, String, String)]) -> Vec<String> {
    let layers: BTreeSet<String> = bases
        .iter()
        .flat_map(|(_, _, d)| layer_digests(&manifest(reg, "bases/good", d)))
        .collect();
    reg.requests()
        .into_iter()
        .filter(|r| {
            r.starts_with("GET /v2/windows/nanoserver/blobs/")
                && layers.iter().any(|l| r.contains(l.as_str()))
        })
        .collect()
}

/// The per-platform tag names the image manifest itself, not a list of it.
fn assert_tag_names_an_image(reg: &Registry, tag: &str) {
    let m = manifest(reg, "csi/driver", tag);
    assert!(
        m["layers"].is_array() && m.get("manifests").is_none(),
        "{tag} is not an image manifest: {m}"
    );
}

#[test]
fn buildah_before_1_44_builds_windows_images_whose_layers_imgcheck_writes() {
    let WindowsBuild {
        _cleanup,
        reg,
        work,
        bases,
        plan,
    } = windows_build(Registry::start_logging_requests());
    let logs = work.path().join("logs");
    let epoch = "1700000000";

    let out = build_cmd(&plan, &reg, &logs)
        .args(["--jobs", "2", "--windows-stage", "buildah"])
        .env("SOURCE_DATE_EPOCH", epoch)
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    // Built, Windows layers written, pushed, assembled, verified with --deep: pass.
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(
        stderr.contains("imgcheck writes the layers each Windows stage adds")
            && stderr.contains(
                "driver windows/amd64 20348: Windows stage built by Buildah: --windows-stage buildah"
            ),
        "{stderr}"
    );
    // Each rewritten image is pushed under its per-platform tag as an image. (Buildah pulls
    // the bases' layers unless its storage has them already: not asserted, the storage is
    // shared.)
    for tag in ["v1-windows-amd64-17763", "v1-windows-amd64-20348"] {
        assert_tag_names_an_image(&reg, tag);
    }
    let list_digest = reg
        .manifest_digest("csi/driver", "v1")
        .unwrap_or_else(|| panic!("no list pushed:\n{stdout}{stderr}"));
    let row = stdout
        .lines()
        .find(|l| l.starts_with("driver "))
        .unwrap_or_else(|| panic!("no table row:\n{stdout}"));
    assert!(row.contains(&list_digest) && row.ends_with("pass"), "{row}");
    let log = fs::read_to_string(logs.join("driver-windows-amd64-20348.log")).unwrap();
    assert!(log.contains(&format!("--timestamp={epoch}")), "{log}");

    // The list: one entry per child, os.version from the base's config.
    let list = manifest(&reg, "csi/driver", &list_digest);
    let entries = list_entries(&list);
    let by_version = |v: Option<&str>| {
        entries
            .iter()
            .find(|e| e.1.as_deref() == v)
            .map(|e| e.2.clone())
            .unwrap_or_else(|| panic!("no entry {v:?} in {entries:?}"))
    };
    let linux = by_version(None);
    let ws2019 = by_version(Some("10.0.17763.5830"));
    let ws2022 = by_version(Some("10.0.20348.2461"));
    assert_eq!(entries.len(), 3);

    // resolve picks the right child per host.
    let list_ref = format!("{}/csi/driver:v1", reg.host());
    for (host, want) in [
        ("linux/amd64", &linux),
        ("windows/amd64:10.0.17763", &ws2019),
        ("windows/amd64:10.0.20348", &ws2022),
    ] {
        let out = imgcheck()
            .args(["resolve", &list_ref, "--platform", host])
            .output()
            .unwrap();
        let (o, e) = text(&out);
        assert!(out.status.success(), "{host}: {o}{e}");
        assert_eq!(o.trim(), want.as_str(), "{host}");
    }
    for ((_, _, base), (child, osversion)) in bases
        .iter()
        .zip([(&ws2019, "ltsc2019"), (&ws2022, "ltsc2022")])
    {
        check_windows_child(&reg, base, child, osversion);
    }

    // verify --deep passes the list: every layer of every Windows child is a Windows layer.
    let out = imgcheck()
        .args(["verify", "--deep", "--format", "json", &list_ref])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out).0);
    let doc = json(&out);
    let errors: Vec<&Value> = doc["images"][0]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["severity"] == "error")
        .collect();
    assert!(errors.is_empty(), "{errors:?}");

    // The same inputs and SOURCE_DATE_EPOCH again: the same digests for every child and the
    // list. The old flag is accepted and ignored with a note.
    let out = build_cmd(&plan, &reg, &work.path().join("logs2"))
        .args(["--jobs", "2", "--allow-legacy-windows-layers"])
        .args(["--windows-stage", "buildah"])
        .env("SOURCE_DATE_EPOCH", epoch)
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(
        stderr.contains("--allow-legacy-windows-layers is ignored"),
        "{stderr}"
    );
    let again = reg.manifest_digest("csi/driver", "v1").unwrap();
    let second = list_entries(&manifest(&reg, "csi/driver", &again));
    assert_eq!(second, entries);
    assert_eq!(again, list_digest);
}

/// The config of a composed Windows child: the base's, with the stage's edits, one history
/// entry more and `created` at SOURCE_DATE_EPOCH.
fn check_composed_config(reg: &Registry, base_digest: &str, child: &str) {
    let config_of = |repo: &str, m: &Value| -> Value {
        let (_, bytes) = reg.get_blob(repo, m["config"]["digest"].as_str().unwrap());
        serde_json::from_slice(&bytes).unwrap()
    };
    let base = config_of("bases/good", &manifest(reg, "bases/good", base_digest));
    let mine = config_of("csi/driver", &manifest(reg, "csi/driver", child));
    assert_eq!(mine["os.version"], base["os.version"]);
    assert_eq!(mine["created"], "2023-11-14T22:13:20Z");
    assert_eq!(mine["config"]["User"], "ContainerAdministrator");
    assert_eq!(
        mine["config"]["Entrypoint"],
        serde_json::json!(["/csi.exe"])
    );
    assert_eq!(
        mine["config"]["Labels"]["org.example.stage"],
        "windows stage"
    );
    let env: Vec<&str> = mine["config"]["Env"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(env.contains(&"CSI_MODE=node"), "{env:?}");
    assert!(env.contains(&"LITERAL=$CSI_MODE"), "{env:?}");
    assert_eq!(mine["config"]["WorkingDir"], "C:\\tools");
    // One history entry for the layer, one empty_layer entry per config instruction
    // (WORKDIR, USER, ENV, ENV, LABEL, ENTRYPOINT).
    let history = |c: &Value| c["history"].as_array().cloned().unwrap_or_default();
    let added = &history(&mine)[history(&base).len()..];
    let layers = added.iter().filter(|h| h["empty_layer"] != true).count();
    assert_eq!((added.len(), layers), (7, 1), "{added:?}");
}

#[test]
fn the_windows_stage_is_composed_without_downloading_the_base() {
    let WindowsBuild {
        _cleanup,
        reg,
        work,
        bases,
        plan,
    } = windows_build(Registry::start_logging_requests());
    // Windows paths as a Windows Containerfile writes them: an absolute C:\ destination, a
    // WORKDIR and a destination relative to it, an escaped dollar.
    let file = plan.parent().unwrap().join("driver/Containerfile.windows");
    let windows_paths = fs::read_to_string(&file).unwrap().replace(
        "COPY --from=builder /out/csi.exe /csi.exe\n",
        "COPY --from=builder /out/csi.exe C:\\\\csi.exe\nWORKDIR C:\\\\tools\n\
         COPY --from=builder /out/csi.exe bin/tool.exe\nENV LITERAL=\\$CSI_MODE\n",
    );
    fs::write(&file, windows_paths).unwrap();
    let logs = work.path().join("logs");
    let epoch = "1700000000";

    // Default (--windows-stage auto): the stage is FROM the base + COPY/USER/ENV/LABEL/
    // ENTRYPOINT, so it is composed.
    let out = build_cmd(&plan, &reg, &logs)
        .args(["--jobs", "2"])
        .env("SOURCE_DATE_EPOCH", epoch)
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    for build in ["17763", "20348"] {
        let line = format!("driver windows/amd64 {build}: Windows stage composed by imgcheck");
        assert!(stderr.contains(&line), "{stderr}");
        let log =
            fs::read_to_string(logs.join(format!("driver-windows-amd64-{build}.log"))).unwrap();
        assert!(
            log.starts_with("# Windows stage composed by imgcheck"),
            "{log}"
        );
        assert!(log.contains("oci:"), "{log}");
    }
    // No base layer was downloaded to build (Buildah pulls them on the other path).
    assert_eq!(base_layer_downloads(&reg, &bases), Vec::<String>::new());
    let list_digest = reg.manifest_digest("csi/driver", "v1").unwrap();
    let row = stdout.lines().find(|l| l.starts_with("driver ")).unwrap();
    assert!(row.contains(&list_digest) && row.ends_with("pass"), "{row}");

    let entries = list_entries(&manifest(&reg, "csi/driver", &list_digest));
    assert_eq!(entries.len(), 3);
    for ((_, _, base), (version, osversion, tag)) in bases.iter().zip([
        ("10.0.17763.5830", "ltsc2019", "v1-windows-amd64-17763"),
        ("10.0.20348.2461", "ltsc2022", "v1-windows-amd64-20348"),
    ]) {
        let child = &entries
            .iter()
            .find(|e| e.1.as_deref() == Some(version))
            .unwrap_or_else(|| panic!("no {version} in {entries:?}"))
            .2;
        // Base layers by digest (so byte for byte), one Windows-format layer with the PAX
        // records, the config edits.
        check_windows_child(&reg, base, child, osversion);
        check_composed_config(&reg, base, child);
        let m = manifest(&reg, "csi/driver", child);
        let top = layer_digests(&m).last().unwrap().clone();
        let (entries, _) = layer_entries(&reg, "csi/driver", &top);
        let names: Vec<&str> = entries.iter().map(|e| e.name.as_str()).collect();
        assert!(names.contains(&"Files/tools/bin/tool.exe"), "{names:?}");
        assert_tag_names_an_image(&reg, tag);
        assert_eq!(
            reg.manifest_digest("csi/driver", tag).as_deref(),
            Some(child.as_str())
        );
    }

    let list_ref = format!("{}/csi/driver:v1", reg.host());
    let out = imgcheck()
        .args(["verify", "--deep", &list_ref])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out).0);

    // Reproducible: the same inputs and SOURCE_DATE_EPOCH give the same list.
    let out = build_cmd(&plan, &reg, &work.path().join("logs2"))
        .args(["--jobs", "2", "--windows-stage", "compose"])
        .env("SOURCE_DATE_EPOCH", epoch)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        text(&out).0,
        text(&out).1
    );
    assert_eq!(
        reg.manifest_digest("csi/driver", "v1"),
        Some(list_digest.clone())
    );

    // Other files, the same SOURCE_DATE_EPOCH: another layer (so another config, child and
    // list); the base's layers are the same.
    // The Windows children by os.version.
    let children = |digest: &str| -> BTreeMap<String, String> {
        list_entries(&manifest(&reg, "csi/driver", digest))
            .into_iter()
            .filter_map(|e| Some((e.1?, e.2)))
            .collect()
    };
    let before = children(&list_digest);
    fs::write(
        plan.parent().unwrap().join("src/version.txt"),
        "v1.2.4-test\n",
    )
    .unwrap();
    let out = build_cmd(&plan, &reg, &work.path().join("logs3"))
        .args(["--jobs", "2"])
        .env("SOURCE_DATE_EPOCH", epoch)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        text(&out).0,
        text(&out).1
    );
    let changed = reg.manifest_digest("csi/driver", "v1").unwrap();
    assert_ne!(changed, list_digest);
    let after = children(&changed);
    assert_eq!(after.len(), 2);
    for (version, old) in &before {
        let (old, new) = (
            manifest(&reg, "csi/driver", old),
            manifest(&reg, "csi/driver", &after[version]),
        );
        let (old_layers, new_layers) = (layer_digests(&old), layer_digests(&new));
        let n = old_layers.len() - 1;
        assert_eq!(old_layers[..n], new_layers[..n]);
        assert_ne!(old_layers[n], new_layers[n]);
        assert_ne!(old["config"]["digest"], new["config"]["digest"]);
    }
}

/// The composed image's push, with the bases reached through a proxy in front of the same
/// registry: a registry that will not mount (202 to every mount from the bases) gets their layers
/// uploaded instead; then a registry that serves other bytes for the pushed manifest: the push
/// fails (could not complete) and the per-platform tag is not moved.
#[test]
fn the_composed_push_uploads_what_is_not_mounted_and_moves_the_tag_only_after_reading_back() {
    require("buildah", "buildah");
    let reg = Registry::start();
    let _cleanup = PulledImages(reg.host());
    let work = tempfile::tempdir().unwrap();
    let builder = push_builder(&reg, work.path());
    let proxy = FaultProxy::start(
        &reg.base_url(),
        vec![Rule::always(
            Match::Request("&from=windows".into()),
            Fault::Status(202),
        )],
    );
    let bases: Vec<(u16, String, String)> = push_windows_bases(&reg)
        .into_iter()
        .map(|(b, r, d)| (b, r.replace(&reg.host(), &proxy.host()), d))
        .collect();
    let plan = write_plan(&work.path().join("plan"), &builder, &bases, "");
    // Windows images only, judged by a Windows-only policy: Buildah's own pushes do not go
    // through the proxy (it garbles their chunked uploads).
    let policy = work.path().join("windows.yaml");
    fs::write(
        &policy,
        "name: windows\nwindows:\n  architectures: [amd64]\n  builds: [17763, 20348]\n  \
         isolation: process\nruntimes: [containerd-1.7]\n",
    )
    .unwrap();
    let yaml = fs::read_to_string(&plan).unwrap();
    let yaml = yaml
        .replace("    linux:\n      architectures: [amd64]\n", "")
        .replace("      linux: driver/Containerfile.linux\n", "")
        .replace(
            "policy: openshift",
            &format!("policy: {}", policy.display()),
        );
    fs::write(&plan, yaml).unwrap();
    let out = build_cmd_to(&plan, &proxy.host(), &work.path().join("logs"))
        .args(["--windows-stage", "compose"])
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    let seen = proxy.seen();
    let refused = seen
        .iter()
        .filter(|s| s.fault == Some(Fault::Status(202)))
        .count();
    assert!(refused > 0, "no mount was asked");
    let base_layers: BTreeSet<String> = bases
        .iter()
        .flat_map(|(_, _, d)| layer_digests(&manifest(&reg, "bases/good", d)))
        .collect();
    for layer in &base_layers {
        let put = format!("digest={}", layer.replace(':', "%3A"));
        assert!(
            seen.iter().any(
                |s| s.request.starts_with("PUT /v2/csi/driver/blobs/uploads/")
                    && s.request.contains(&put)
            ),
            "{layer} not uploaded after the refused mount"
        );
        assert!(reg.get_blob("csi/driver", layer).0 == 200, "{layer}");
    }
    for tag in ["v1-windows-amd64-17763", "v1-windows-amd64-20348"] {
        let image = format!("{}/csi/driver:{tag}", reg.host());
        let deep = imgcheck()
            .args(["verify", "--deep", &image])
            .output()
            .unwrap();
        let (out, err) = text(&deep);
        assert!(!out.contains("layer-"), "{tag}: {out}{err}");
        assert_tag_names_an_image(&reg, tag);
    }

    // Other bytes for the pushed manifest when it is read back by digest.
    proxy.set_rules(vec![Rule::always(
        Match::Request("GET /v2/csi/driver/manifests/sha256:".into()),
        Fault::FlipByte,
    )]);
    fs::write(plan.parent().unwrap().join("src/version.txt"), "v9\n").unwrap();
    let tag = "v1-windows-amd64-17763";
    let before = reg.manifest_digest("csi/driver", tag);
    let out = build_cmd_to(&plan, &proxy.host(), &work.path().join("logs2"))
        .args(["--windows-stage", "compose"])
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(3), "{stdout}{stderr}");
    let said = format!("{stdout}{stderr}");
    assert!(said.contains("digest mismatch"), "{said}");
    assert_eq!(reg.manifest_digest("csi/driver", tag), before);
}

/// A Windows base on another registry than the push target: its layers cannot be mounted, so
/// they are copied (read from the base's registry, digests checked, uploaded); the children
/// start with the base's layers by digest and the list passes `verify --deep`.
#[test]
fn a_base_on_another_registry_is_copied_into_the_target() {
    require("buildah", "buildah");
    let reg = Registry::start();
    let bases_reg = Registry::start();
    let _cleanup = PulledImages(reg.host());
    let work = tempfile::tempdir().unwrap();
    let builder = push_builder(&reg, work.path());
    let bases = push_windows_bases(&bases_reg);
    let plan = write_plan(&work.path().join("plan"), &builder, &bases, "");
    let out = build_cmd(&plan, &reg, &work.path().join("logs"))
        .args(["--windows-stage", "compose"])
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    for (_, _, base) in &bases {
        for layer in layer_digests(&manifest(&bases_reg, "bases/good", base)) {
            assert_eq!(reg.get_blob("csi/driver", &layer).0, 200, "{layer}");
        }
    }
    let list = manifest(&reg, "csi/driver", "v1");
    for (version, child) in list_entries(&list)
        .into_iter()
        .filter_map(|e| Some((e.1?, e.2)))
    {
        let (_, _, base) = bases
            .iter()
            .find(|(b, _, _)| version.contains(&format!(".{b}.")))
            .unwrap();
        let base_layers = layer_digests(&manifest(&bases_reg, "bases/good", base));
        let layers = layer_digests(&manifest(&reg, "csi/driver", &child));
        assert_eq!(layers[..base_layers.len()], base_layers[..], "{version}");
    }
    let list_ref = format!("{}/csi/driver:v1", reg.host());
    let deep = imgcheck()
        .args(["verify", "--deep", &list_ref])
        .output()
        .unwrap();
    assert_eq!(deep.status.code(), Some(0), "{}", text(&deep).0);
}

/// A base layer that cannot be fetched while the composed image is pushed (its registry
/// answers 503 for it): the image could not be completed (exit 3), not a failed build, and no
/// per-platform tag names a half-pushed image.
#[test]
fn an_unreachable_base_layer_while_composing_is_could_not_complete() {
    require("buildah", "buildah");
    let reg = Registry::start();
    let bases_reg = Registry::start();
    let _cleanup = PulledImages(reg.host());
    let work = tempfile::tempdir().unwrap();
    let builder = push_builder(&reg, work.path());
    let bases = push_windows_bases(&bases_reg);
    let layers = layer_digests(&manifest(&bases_reg, "bases/good", &bases[0].2));
    let proxy = FaultProxy::start(
        &bases_reg.base_url(),
        vec![Rule::always(
            Match::Request(format!("GET /v2/windows/nanoserver/blobs/{}", layers[0])),
            Fault::Status(503),
        )],
    );
    let bases: Vec<(u16, String, String)> = bases
        .into_iter()
        .map(|(b, r, d)| (b, r.replace(&bases_reg.host(), &proxy.host()), d))
        .collect();
    let plan = write_plan(&work.path().join("plan"), &builder, &bases, "");
    let out = build_cmd(&plan, &reg, &work.path().join("logs"))
        .args(["--windows-stage", "compose"])
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(3), "{stdout}{stderr}");
    assert!(proxy.faults_injected() > 0);
    assert_eq!(
        reg.manifest_digest("csi/driver", "v1-windows-amd64-17763"),
        None
    );
    assert_eq!(reg.manifest_digest("csi/driver", "v1"), None);
}

#[test]
fn a_stage_that_cannot_be_composed_is_built_by_buildah_and_says_why() {
    let WindowsBuild {
        _cleanup,
        reg,
        work,
        bases,
        plan,
    } = windows_build(Registry::start());
    let file = plan.parent().unwrap().join("driver/Containerfile.windows");
    let text_before = fs::read_to_string(&file).unwrap();
    let exposed = text_before.replace(
        "USER ContainerAdministrator\n",
        "USER ContainerAdministrator\nEXPOSE 8080\n",
    );
    fs::write(&file, exposed).unwrap();
    let logs = work.path().join("logs");
    let out = build_cmd(&plan, &reg, &logs).output().unwrap();
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    let why = "Windows stage built by Buildah: EXPOSE at line 14: EXPOSE is not composed";
    assert!(
        stderr.contains(&format!("driver windows/amd64 17763: {why}")),
        "{stderr}"
    );
    let log = fs::read_to_string(logs.join("driver-windows-amd64-17763.log")).unwrap();
    assert!(log.starts_with(&format!("# {why}\n")), "{log}");
    // Buildah's path, its layer rewritten: the same layout as a composed one.
    let list = manifest(&reg, "csi/driver", "v1");
    let child = list_entries(&list)
        .into_iter()
        .find(|e| e.1.as_deref() == Some("10.0.17763.5830"))
        .unwrap()
        .2;
    check_windows_child(&reg, &bases[0].2, &child, "ltsc2019");
}

#[test]
fn a_stage_that_cannot_be_composed_is_refused_when_compose_is_forced() {
    require("buildah", "buildah");
    let reg = Registry::start();
    let work = tempfile::tempdir().unwrap();
    let bases = push_windows_bases(&reg);
    let plan = write_plan(&work.path().join("plan"), "busybox:latest", &bases, "");
    let file = plan.parent().unwrap().join("driver/Containerfile.windows");
    let text_before = fs::read_to_string(&file).unwrap();
    fs::write(
        &file,
        text_before.replace("ENV CSI_MODE=node", "STOPSIGNAL SIGTERM"),
    )
    .unwrap();
    // Forced compose: refused before anything is built, naming the instruction (exit 2).
    let out = build_cmd(&plan, &reg, &work.path().join("logs"))
        .args(["--windows-stage", "compose"])
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stdout}{stderr}");
    assert!(
        stderr.contains("--windows-stage compose: driver windows/amd64 17763: STOPSIGNAL at line 14: STOPSIGNAL is not composed"),
        "{stderr}"
    );
    assert_eq!(
        reg.manifest_digest("csi/driver", "v1-windows-amd64-17763"),
        None
    );
}

#[test]
fn a_failed_build_stops_its_image_and_not_the_others() {
    require("buildah", "buildah");
    let reg = Registry::start();
    let _cleanup = PulledImages(reg.host());
    let work = tempfile::tempdir().unwrap();
    let builder = push_builder(&reg, work.path());
    let dir = work.path().join("plan");
    fs::create_dir_all(dir.join("broken")).unwrap();
    fs::write(
        dir.join("broken/Containerfile.linux"),
        // amd64 fails at once; arm64 would take a minute, and must be stopped when amd64 fails.
        "ARG BUILDER\nARG TARGETARCH\nFROM ${BUILDER}\nARG TARGETARCH\n\
         RUN if [ \"$TARGETARCH\" = amd64 ]; then echo about to fail && false; else sleep 90; fi\n",
    )
    .unwrap();
    // Two Linux-only images (no Windows targets, so this Buildah is fine without the flag).
    let extra = format!(
        "  - name: broken\n    context: src\n    containerfiles:\n      linux: broken/Containerfile.linux\n    \
         build_args:\n      BUILDER: {builder}\n    linux:\n      architectures: [amd64, arm64]\n    policy: linux-only\n"
    );
    let plan = write_plan(&dir, &builder, &[], &extra);
    // Make `driver` Linux-only too.
    let text_plan = fs::read_to_string(&plan)
        .unwrap()
        .replace("windows_bases:\n", "")
        .replace("    windows:\n      architectures: [amd64]\n      builds:\n        - build: 17763\n        - build: 20348\n    policy: openshift", "    policy: linux-only");
    fs::write(&plan, text_plan).unwrap();
    let logs = work.path().join("logs");
    let started = std::time::Instant::now();
    let out = build_cmd(&plan, &reg, &logs)
        .args(["--jobs", "3"])
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    // The arm64 build of the same image was killed, not waited for.
    assert!(
        started.elapsed() < std::time::Duration::from_secs(60),
        "{stderr}"
    );
    let arm = fs::read_to_string(logs.join("broken-linux-arm64.log")).unwrap();
    assert!(
        arm.contains("# stopped: another build of this image failed"),
        "{arm}"
    );
    assert!(
        stderr.contains("broken linux/arm64: skipped: another build of this image failed"),
        "{stderr}"
    );
    // The failure is reported with the tail of its log.
    assert!(
        stderr.contains("broken linux/amd64: buildah build failed"),
        "{stderr}"
    );
    assert!(stderr.contains("about to fail"), "{stderr}");
    let broken = stdout.lines().find(|l| l.starts_with("broken ")).unwrap();
    assert!(broken.contains("build failed"), "{broken}");
    assert_eq!(reg.manifest_digest("csi/broken", "v1"), None);
    // The other image was built, assembled and passes.
    let driver = stdout.lines().find(|l| l.starts_with("driver ")).unwrap();
    let digest = reg
        .manifest_digest("csi/driver", "v1")
        .unwrap_or_else(|| panic!("driver list not pushed\n{stdout}\n{stderr}"));
    assert!(
        driver.contains(&digest) && driver.ends_with("pass"),
        "{driver}"
    );
}

/// The real plan's checkout: `buildah/images.yaml` with its four images.
fn real_plan() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("buildah/images.yaml")
}

const REAL_IMAGES: [(&str, &str); 4] = [
    ("azurefile-csi", "AZUREFILE_CSI_SRC"),
    ("vsphere-csi", "VSPHERE_CSI_SRC"),
    ("csi-node-driver-registrar", "NODE_DRIVER_REGISTRAR_SRC"),
    ("csi-livenessprobe", "LIVENESSPROBE_SRC"),
];

fn without_contexts(mut c: Command) -> Command {
    for (_, var) in REAL_IMAGES {
        c.env_remove(var);
    }
    c
}

#[test]
fn check_passes_on_the_real_plan() {
    let mut c = imgcheck();
    c.args(["build", "--check", "--plan"]).arg(real_plan());
    let out = without_contexts(c).output().unwrap();
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(
        stdout.contains("4 image(s) checked, 0 error(s), 4 note(s)"),
        "{stdout}"
    );
    for (name, var) in REAL_IMAGES {
        assert!(
            stdout.contains(&format!("note: [{name}] context ${{{var}}}: set {var}")),
            "{stdout}"
        );
    }
}

#[test]
fn dry_run_prints_every_command_of_the_real_plan() {
    let logs = tempfile::tempdir().unwrap();
    let mut c = imgcheck();
    c.args(["build", "--dry-run", "--plan"])
        .arg(real_plan())
        .args([
            "--push",
            "quay.example/ocp",
            "--tag",
            "4.20",
            "--storage-driver",
            "vfs",
        ])
        .arg("--log-dir")
        .arg(logs.path());
    let out = without_contexts(c).output().unwrap();
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    // Nothing was run: no log was written.
    assert_eq!(fs::read_dir(logs.path()).unwrap().count(), 0);
    let builds: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("buildah --storage-driver vfs build "))
        .collect();
    let pushes: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("buildah --storage-driver vfs push "))
        .collect();
    // azurefile, registrar, livenessprobe: linux amd64+arm64; vsphere: amd64; all: 2 Windows.
    assert_eq!(builds.len(), 4 * 2 + 3 * 2 + 1, "{stdout}");
    assert_eq!(pushes.len(), builds.len());
    let l = logs.path().display();
    let want = [
        format!(
            "buildah --storage-driver vfs build --platform=windows/amd64 --build-arg BUILDER=docker.io/library/golang:1.24 \
             --build-arg TARGETOS=windows --build-arg TARGETARCH=amd64 \
             --build-arg WINDOWS_BASE=mcr.microsoft.com/windows/nanoserver:ltsc2019 --build-arg OSVERSION=ltsc2019 \
             --iidfile {l}/azurefile-csi-windows-amd64-17763.iid -t localhost/imgcheck-build/azurefile-csi:windows-amd64-17763 \
             -f {}/buildah/azurefile-csi/Containerfile.windows \"${{AZUREFILE_CSI_SRC}}\"",
            env!("CARGO_MANIFEST_DIR")
        ),
        // A stage of COPY/USER/ENTRYPOINT is composed (the default --windows-stage auto):
        // Buildah builds its files into a layout, imgcheck pushes the image.
        "# csi-livenessprobe windows/amd64 20348: Windows stage composed by imgcheck: Buildah \
         builds only its files, the base is not downloaded"
            .to_string(),
        "#   COPY --from=builder /out/livenessprobe.exe /livenessprobe.exe".to_string(),
        format!(
            "buildah --storage-driver vfs push --digestfile {l}/csi-livenessprobe-windows-amd64-20348.digest \
             \"$(cat {l}/csi-livenessprobe-windows-amd64-20348.iid)\" \
             oci:{l}/csi-livenessprobe-windows-amd64-20348.files"
        ),
        "# then: compose docker://quay.example/ocp/csi-livenessprobe:4.20-windows-amd64-20348 from \
         mcr.microsoft.com/windows/nanoserver:ltsc2022 (its manifest and config read, one Windows \
         layer of the files added; its layers mounted or copied, never pulled to build)"
            .to_string(),
        // azurefile-csi copies from a servercore stage: Buildah builds it, and says why.
        "# azurefile-csi windows/amd64 17763: Windows stage built by Buildah: the Windows stage \
         at line 9 comes before the last one (Buildah would pull its base)"
            .to_string(),
        format!(
            "buildah --storage-driver vfs build --platform=linux/arm64 --build-arg BUILDER=docker.io/library/golang:1.24 \
             --build-arg TARGETOS=linux --build-arg TARGETARCH=arm64 \
             --iidfile {l}/csi-node-driver-registrar-linux-arm64.iid -t localhost/imgcheck-build/csi-node-driver-registrar:linux-arm64 \
             -f {}/buildah/node-driver-registrar/Containerfile.linux \"${{NODE_DRIVER_REGISTRAR_SRC}}\"",
            env!("CARGO_MANIFEST_DIR")
        ),
        "# then: assemble quay.example/ocp/vsphere-csi:4.20 from the pushed digests, push it, verify it with policy openshift (--deep)".to_string(),
    ];
    for w in want {
        assert!(
            stdout.lines().any(|line| line == w),
            "missing line:\n{w}\nin:\n{stdout}"
        );
    }
    for (name, _) in REAL_IMAGES {
        for slug in ["windows-amd64-17763", "windows-amd64-20348", "linux-amd64"] {
            let tag = format!("docker://quay.example/ocp/{name}:4.20-{slug}");
            let composed = format!("# then: compose {tag} from ");
            let pushed = pushes.iter().any(|p| p.ends_with(&tag));
            let by_imgcheck = stdout.lines().any(|l| l.starts_with(&composed));
            let windows = slug.starts_with("windows");
            let want = (
                !windows || name == "azurefile-csi",
                windows && name != "azurefile-csi",
            );
            assert_eq!((pushed, by_imgcheck), want, "{name} {slug}");
        }
    }
    // --windows-stage buildah: every Windows stage built and pushed by Buildah.
    let mut c = imgcheck();
    c.args(["build", "--dry-run", "--windows-stage", "buildah", "--plan"])
        .arg(real_plan())
        .args(["--push", "quay.example/ocp", "--tag", "4.20"])
        .arg("--log-dir")
        .arg(logs.path());
    let out = without_contexts(c).output().unwrap();
    let stdout = text(&out).0;
    assert!(!stdout.contains("# then: compose"), "{stdout}");
    assert!(
        stdout.contains(
            "# vsphere-csi windows/amd64 17763: Windows stage built by Buildah: --windows-stage buildah"
        ),
        "{stdout}"
    );
    assert_eq!(fs::read_dir(logs.path()).unwrap().count(), 0);
}

#[test]
fn check_reports_each_problem_with_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    fs::create_dir_all(d.join("x")).unwrap();
    fs::write(
        d.join("x/Containerfile.windows"),
        "ARG WINDOWS_BASE\nFROM mcr.microsoft.com/windows/servercore:ltsc2022 AS core\n\
         FROM ${WINDOWS_BASE}\nRUN echo no\nCOPY --from=core /Windows/System32/netapi32.dll /\n",
    )
    .unwrap();
    fs::write(
        d.join("x/Containerfile.scratch"),
        "FROM busybox AS b\nFROM scratch\nCOPY --from=b /a /a\n",
    )
    .unwrap();
    let plan = "images:\n  - name: x\n    context: .\n    containerfiles:\n      windows: x/Containerfile.windows\n    \
                windows:\n      architectures: [amd64]\n      builds: [{build: 17763}, {build: 20348}, {build: 26100}]\n    policy: openshift\n  \
                - name: y\n    context: nowhere\n    containerfiles:\n      windows: x/Containerfile.scratch\n      linux: x/missing\n    \
                linux:\n      architectures: [amd64]\n    windows:\n      architectures: [amd64]\n      builds: [{build: 20348}]\n    policy: openshift\n";
    fs::write(d.join("images.yaml"), plan).unwrap();
    let out = imgcheck()
        .args(["build", "--check", "--plan"])
        .arg(d.join("images.yaml"))
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stdout}{stderr}");
    let p = d.display();
    for want in [
        format!("{p}/x/Containerfile.windows:4: error: [x] RUN in Windows stage #2"),
        format!(
            "{p}/x/Containerfile.windows:5: error: [x] COPY --from=core /Windows/System32/netapi32.dll"
        ),
        format!("{p}/images.yaml: error: [x] Windows build 26100 is not in policy 'openshift'"),
        format!("{p}/x/Containerfile.scratch:2: error: [y] the Windows stage is FROM scratch"),
        format!("{p}/images.yaml: error: [y] Containerfile {p}/x/missing:"),
        format!("{p}/images.yaml: error: [y] context {p}/nowhere is not a directory"),
        format!("{p}/images.yaml: error: [y] policy 'openshift' requires Windows build 17763"),
        format!(
            "{p}/images.yaml: error: [x] policy 'openshift' requires Linux amd64, which the plan does not build"
        ),
        "2 image(s) checked, 8 error(s), 0 note(s)".to_string(),
    ] {
        assert!(stdout.contains(&want), "missing {want:?} in:\n{stdout}");
    }
    // A plan with an unknown key is refused with its line, before anything else.
    fs::write(
        d.join("bad.yaml"),
        plan.replace(
            "    policy: openshift\n  - name: y",
            "    polcy: openshift\n  - name: y",
        ),
    )
    .unwrap();
    let out = imgcheck()
        .args(["build", "--check", "--plan"])
        .arg(d.join("bad.yaml"))
        .output()
        .unwrap();
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr.contains("unknown field `polcy`") && stderr.contains("line 9"),
        "{stderr}"
    );
}

/// A Windows base whose config has no os.version (`buildah config --os windows` on scratch,
/// with a `Files/` + `Hives/` layer), pushed as `REG/windows/unversioned:1`.
fn push_unversioned_base(reg: &Registry, work: &Path) -> String {
    let root = work.join("winroot");
    fs::create_dir_all(root.join("Files/Windows/System32")).unwrap();
    fs::create_dir_all(root.join("Hives")).unwrap();
    fs::write(root.join("Files/Windows/System32/ntdll.dll"), "not really").unwrap();
    fs::write(root.join("Hives/Software_Base"), "hive").unwrap();
    let out = run(buildah().args(["from", "scratch"]));
    let container = String::from_utf8_lossy(&out.stdout).trim().to_string();
    run(buildah()
        .args(["copy", &container])
        .arg(format!("{}/", root.display()))
        .arg("/"));
    run(buildah().args(["config", "--os", "windows", "--arch", "amd64", &container]));
    let local = format!("localhost/imgcheck-test/unversioned-{}", reg.port());
    run(buildah().args(["commit", "--rm", &container, &local]));
    let pushed = format!("{}/windows/unversioned:1", reg.host());
    run(buildah().args([
        "push",
        "--tls-verify=false",
        &local,
        &format!("docker://{pushed}"),
    ]));
    let _ = buildah().args(["rmi", &local]).output();
    pushed
}

#[test]
fn windows_bases_are_checked_and_os_version_filled_in() {
    require("buildah", "buildah");
    let reg = Registry::start();
    let _cleanup = PulledImages(reg.host());
    let work = tempfile::tempdir().unwrap();
    let builder = push_builder(&reg, work.path());
    let bases = push_windows_bases(&reg);
    let unversioned = push_unversioned_base(&reg, work.path());
    let dir = work.path().join("plan");
    // `driver` is the image written by write_plan; rewrite its plan to two Windows-only images.
    write_plan(&dir, &builder, &bases, "");
    for (file, build) in [("ws2019.yaml", 17763), ("ws2022.yaml", 20348)] {
        fs::write(
            dir.join(file),
            format!(
                "name: only-{build}\nwindows:\n  architectures: [amd64]\n  builds: [{build}]\n"
            ),
        )
        .unwrap();
    }
    let image = |name: &str, build: u16, base: &str, policy: &str| {
        format!(
            "  - name: {name}\n    context: src\n    containerfiles:\n      windows: driver/Containerfile.windows\n    \
             build_args:\n      BUILDER: {builder}\n    windows:\n      architectures: [amd64]\n      \
             builds:\n        - build: {build}\n          base: {base}\n    policy: {policy}\n"
        )
    };
    let plan = dir.join("bases.yaml");
    fs::write(
        &plan,
        format!(
            "images:\n{}{}",
            image("unversioned", 17763, &unversioned, "ws2019.yaml"),
            // A 17763 base planned as 20348: refused before building.
            image("mislabelled", 20348, &bases[0].1, "ws2022.yaml"),
        ),
    )
    .unwrap();
    let logs = work.path().join("logs");
    let out = build_cmd(&plan, &reg, &logs)
        .arg("--allow-legacy-windows-layers")
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    let row = stdout
        .lines()
        .find(|l| l.starts_with("mislabelled "))
        .unwrap();
    assert!(
        row.contains("build failed")
            && row.contains(
                "is build 17763 (os.version 10.0.17763.5830), but the plan builds it as 20348"
            ),
        "{row}"
    );
    assert!(!logs.join("mislabelled-windows-amd64-20348.log").exists());
    // The unversioned base got --os-version, so the image and its list entry carry one.
    let log = fs::read_to_string(logs.join("unversioned-windows-amd64-17763.log")).unwrap();
    assert!(log.contains("--os-version=10.0.17763 "), "{log}");
    let digest = reg
        .manifest_digest("csi/unversioned", "v1")
        .expect("list pushed");
    let list = manifest(&reg, "csi/unversioned", &digest);
    assert_eq!(list["manifests"].as_array().unwrap().len(), 1);
    assert_eq!(list["manifests"][0]["platform"]["os.version"], "10.0.17763");
    let out = imgcheck()
        .args([
            "resolve",
            &format!("{}/csi/unversioned:v1", reg.host()),
            "--platform",
            "windows/amd64:10.0.17763",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out).1);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        list["manifests"][0]["digest"].as_str().unwrap()
    );
}

#[test]
fn bad_arguments_and_a_missing_buildah_have_their_exit_codes() {
    let dir = tempfile::tempdir().unwrap();
    let plan = write_plan(dir.path(), "b.example/builder:1", &[], "");
    // Linux-only, so the only Buildah requirement is that it exists.
    let text_plan = fs::read_to_string(&plan)
        .unwrap()
        .replace("windows_bases:\n", "")
        .replace(
            "    windows:\n      architectures: [amd64]\n      builds:\n        - build: 17763\n        - build: 20348\n    policy: openshift",
            "    policy: linux-only",
        );
    fs::write(&plan, text_plan).unwrap();
    let src = dir.path().join("src");
    let empty_path = dir.path().join("no-tools");
    fs::create_dir_all(&empty_path).unwrap();
    let cases: [(&[&str], Option<&Path>, i32, &str); 4] = [
        (
            &["--push", "reg.example/ns", "--image", "nope"],
            None,
            2,
            "no image named 'nope' (the plan has: driver)",
        ),
        (&["--push", "Bad Registry/ns"], None, 2, "--push"),
        (
            &["--check", "--plan", "/nonexistent/images.yaml"],
            None,
            2,
            "plan /nonexistent/images.yaml: cannot read",
        ),
        (
            &["--push", "127.0.0.1:1/ns"],
            Some(&empty_path),
            3,
            "buildah not found: install it (Debian/Ubuntu: apt-get install buildah",
        ),
    ];
    for (args, path, code, want) in cases {
        let mut c = imgcheck();
        c.arg("build");
        if !args.contains(&"--plan") {
            c.arg("--plan").arg(&plan);
        }
        c.args(args).env("TEST_DRIVER_SRC", &src);
        if let Some(p) = path {
            c.env("PATH", p);
        }
        let out = c.output().unwrap();
        let (stdout, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {stdout}{stderr}");
        assert!(
            stderr.contains(want),
            "{args:?}: missing {want:?} in {stderr}"
        );
    }
    // An unset context variable is a note for --check and --dry-run, an error for a build.
    let out = imgcheck()
        .args(["build", "--push", "reg.example/ns", "--plan"])
        .arg(&plan)
        .env_remove("TEST_DRIVER_SRC")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out)
            .1
            .contains("set the build context variables first: driver needs TEST_DRIVER_SRC")
    );
}

#[test]
fn an_unreachable_push_registry_is_could_not_complete() {
    require("buildah", "buildah");
    let reg = Registry::start();
    let _cleanup = PulledImages(reg.host());
    let work = tempfile::tempdir().unwrap();
    let builder = push_builder(&reg, work.path());
    let plan = write_plan(&work.path().join("plan"), &builder, &[], "");
    let text_plan = fs::read_to_string(&plan)
        .unwrap()
        .replace("windows_bases:\n", "")
        .replace(
            "    windows:\n      architectures: [amd64]\n      builds:\n        - build: 17763\n        - build: 20348\n    policy: openshift",
            "    policy: linux-only",
        );
    fs::write(&plan, text_plan).unwrap();
    // A port nothing listens on: taken from a registry that is then stopped.
    let closed = {
        let gone = Registry::start();
        gone.host()
    };
    let out = imgcheck()
        .args(["--tls-verify=false", "build", "--plan"])
        .arg(&plan)
        .args([
            "--push",
            &format!("{closed}/csi"),
            "--storage-driver",
            "vfs",
            "--isolation",
            "chroot",
        ])
        .arg("--log-dir")
        .arg(work.path().join("logs"))
        .env("TEST_DRIVER_SRC", plan.parent().unwrap().join("src"))
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(3), "{stdout}{stderr}");
    let row = stdout.lines().find(|l| l.starts_with("driver ")).unwrap();
    assert!(
        row.contains(&format!(
            "error: linux/amd64: buildah push to {closed}/csi/driver:latest-linux-amd64 failed"
        )),
        "{row}"
    );
    assert!(stderr.contains("connection refused"), "{stderr}");
}

#[test]
fn a_hostprocess_image_is_one_build_from_the_hostprocess_base() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    fs::create_dir_all(d.join("proxy")).unwrap();
    fs::create_dir_all(d.join("src")).unwrap();
    fs::write(
        d.join("proxy/Containerfile.windows"),
        "ARG WINDOWS_BASE\nFROM ${WINDOWS_BASE}\nCOPY proxy.exe /proxy.exe\nENTRYPOINT [\"/proxy.exe\"]\n",
    )
    .unwrap();
    // A policy file stands in for the embedded openshift-hostprocess of the engine branch.
    fs::write(
        d.join("hpc.yaml"),
        "name: hpc\ndescription: test\nwindows:\n  architectures: [amd64]\n  builds: [17763, 20348]\n",
    )
    .unwrap();
    let image = "images:\n  - name: proxy\n    context: src\n    containerfiles:\n      windows: proxy/Containerfile.windows\n    \
                 windows:\n      architectures: [amd64]\n      hostprocess: true\n    policy: hpc.yaml\n";
    let logs = d.join("logs");
    for (prefix, base) in [
        (
            "",
            "mcr.microsoft.com/oss/kubernetes/windows-host-process-containers-base-image:v1.0.0",
        ),
        (
            "hostprocess_base: mirror.example/hpc:1\n",
            "mirror.example/hpc:1",
        ),
    ] {
        fs::write(d.join("images.yaml"), format!("{prefix}{image}")).unwrap();
        // By default the stage (COPY + ENTRYPOINT) is composed on the HostProcess base.
        let out = imgcheck()
            .args(["build", "--dry-run", "--plan"])
            .arg(d.join("images.yaml"))
            .args(["--push", "reg.example/ns", "--tag", "v1", "--log-dir"])
            .arg(&logs)
            .output()
            .unwrap();
        let composed = format!(
            "# then: compose docker://reg.example/ns/proxy:v1-windows-amd64-hostprocess from {base} "
        );
        assert!(text(&out).0.contains(&composed), "{}", text(&out).0);
        // Buildah's path: its build line.
        let out = imgcheck()
            .args(["build", "--dry-run", "--windows-stage", "buildah", "--plan"])
            .arg(d.join("images.yaml"))
            .args(["--push", "reg.example/ns", "--tag", "v1", "--log-dir"])
            .arg(&logs)
            .output()
            .unwrap();
        let (stdout, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
        let builds: Vec<&str> = stdout
            .lines()
            .filter(|l| l.starts_with("buildah build "))
            .collect();
        let l = logs.display();
        assert_eq!(
            builds,
            [format!(
                "buildah build --platform=windows/amd64 --build-arg TARGETOS=windows \
                 --build-arg TARGETARCH=amd64 --build-arg WINDOWS_BASE={base} \
                 --iidfile {l}/proxy-windows-amd64-hostprocess.iid \
                 -t localhost/imgcheck-build/proxy:windows-amd64-hostprocess \
                 -f {}/proxy/Containerfile.windows {}/src",
                d.display(),
                d.display()
            )
            .as_str()],
            "{stdout}"
        );
        assert!(
            stdout.contains("docker://reg.example/ns/proxy:v1-windows-amd64-hostprocess"),
            "{stdout}"
        );
    }
}
