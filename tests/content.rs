//! `verify --deep` on what the entries run (issue 23), against a real registry, with real
//! programs built here: a Go program cross-compiled (Debian `golang-go`) for windows/amd64,
//! linux/amd64 and linux/arm64 inside a git repository (so `vcs.revision` is stamped), and a
//! C program linked with `-lnetapi32` by MinGW (Debian `gcc-mingw-w64-x86-64`), whose import
//! table names NETAPI32.dll.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use crate::common::{Registry, imgcheck, sha256_digest};
use crate::schema::assert_conforms;
use serde_json::{Value, json};

const TAR: &str = "application/vnd.oci.image.layer.v1.tar";

/// The programs, built once per test run.
struct Programs {
    go_windows: Vec<u8>,
    go_linux_amd64: Vec<u8>,
    go_linux_arm64: Vec<u8>,
    netapi_exe: Vec<u8>,
    revision: String,
}

pub(crate) fn run_ok(command: &mut Command, package: &str) -> Vec<u8> {
    let out = command.output().unwrap_or_else(|e| {
        panic!("cannot run {command:?} ({e}): install the Debian package {package}")
    });
    assert!(
        out.status.success(),
        "{command:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

fn programs() -> &'static Programs {
    static PROGRAMS: OnceLock<Programs> = OnceLock::new();
    PROGRAMS.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap().keep();
        let src = dir.join("src");
        std::fs::create_dir_all(&src).unwrap();
        std::fs::write(src.join("go.mod"), "module example.com/driver\n\ngo 1.19\n").unwrap();
        std::fs::write(
            src.join("main.go"),
            "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"driver\") }\n",
        )
        .unwrap();
        let git = |args: &[&str]| {
            run_ok(
                Command::new("git")
                    .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
                    .args(args)
                    .current_dir(&src),
                "git",
            )
        };
        git(&["init", "-q"]);
        git(&["add", "."]);
        git(&["commit", "-qm", "driver"]);
        let revision = String::from_utf8(git(&["rev-parse", "HEAD"]))
            .unwrap()
            .trim()
            .to_string();
        let cache = std::env::temp_dir().join("imgcheck-content-gocache");
        let go = |goos: &str, goarch: &str, out: &str| -> Vec<u8> {
            let target = dir.join(out);
            run_ok(
                Command::new("go")
                    .args(["build", "-trimpath", "-o"])
                    .arg(&target)
                    .arg(".")
                    .current_dir(&src)
                    .env("GOOS", goos)
                    .env("GOARCH", goarch)
                    .env("CGO_ENABLED", "0")
                    .env("GOCACHE", &cache)
                    .env("GOPATH", dir.join("gopath"))
                    .env("GOFLAGS", "-buildvcs=true"),
                "golang-go",
            );
            std::fs::read(target).unwrap()
        };
        let c = dir.join("netapi.c");
        std::fs::write(
            &c,
            "#include <windows.h>\n#include <lm.h>\nint main(void) { LPWKSTA_INFO_100 i; \
             return NetWkstaGetInfo(NULL, 100, (LPBYTE *)&i) ? 1 : 0; }\n",
        )
        .unwrap();
        let exe = dir.join("netapi.exe");
        run_ok(
            Command::new("x86_64-w64-mingw32-gcc")
                .arg(&c)
                .arg("-o")
                .arg(&exe)
                .arg("-lnetapi32"),
            "gcc-mingw-w64-x86-64",
        );
        Programs {
            go_windows: go("windows", "amd64", "driver.exe"),
            go_linux_amd64: go("linux", "amd64", "driver-amd64"),
            go_linux_arm64: go("linux", "arm64", "driver-arm64"),
            netapi_exe: std::fs::read(exe).unwrap(),
            revision,
        }
    })
}

/// A tar layer of regular files.
pub(crate) fn layer(files: &[(&str, &[u8])]) -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    for (name, data) in files {
        let mut h = tar::Header::new_gnu();
        h.set_size(data.len() as u64);
        h.set_mode(0o755);
        b.append_data(&mut h, name, *data).unwrap();
    }
    b.into_inner().unwrap()
}

/// A Windows base layer: System32 with the DLLs a nanoserver has that these programs import
/// (never NETAPI32.dll), and cmd.exe.
pub(crate) fn windows_base() -> Vec<u8> {
    layer(&[
        ("Files/Windows/System32/KERNEL32.dll", b"MZ"),
        ("Files/Windows/System32/msvcrt.dll", b"MZ"),
        ("Files/Windows/System32/ucrtbase.dll", b"MZ"),
        ("Files/Windows/System32/cmd.exe", b"MZ"),
        ("Hives/SOFTWARE_BASE", b"x"),
    ])
}

fn write_blob(layout: &Path, bytes: &[u8]) -> Value {
    let digest = sha256_digest(bytes);
    let dir = layout.join("blobs/sha256");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(digest.trim_start_matches("sha256:")), bytes).unwrap();
    json!({"digest": digest, "size": bytes.len()})
}

/// One image of a list: its platform, run settings (`config`), labels and layers.
pub(crate) struct Entry {
    pub(crate) os: &'static str,
    pub(crate) arch: &'static str,
    pub(crate) entrypoint: Vec<&'static str>,
    pub(crate) labels: Value,
    pub(crate) layers: Vec<Vec<u8>>,
}

/// An OCI layout `DIR/NAME` with one list of `entries`, tagged `v1`.
pub(crate) fn list_layout(dir: &Path, name: &str, entries: &[Entry]) -> PathBuf {
    let layout = dir.join(name);
    std::fs::create_dir_all(&layout).unwrap();
    std::fs::write(
        layout.join("oci-layout"),
        r#"{"imageLayoutVersion":"1.0.0"}"#,
    )
    .unwrap();
    let mut manifests = Vec::new();
    for e in entries {
        let mut descriptors = Vec::new();
        let mut diff_ids = Vec::new();
        for bytes in &e.layers {
            let mut d = write_blob(&layout, bytes);
            d["mediaType"] = json!(TAR);
            descriptors.push(d);
            diff_ids.push(sha256_digest(bytes));
        }
        let mut platform = json!({"architecture": e.arch, "os": e.os});
        if e.os == "windows" {
            platform["os.version"] = json!("10.0.17763.1");
        }
        let mut config = platform.clone();
        config["rootfs"] = json!({"type": "layers", "diff_ids": diff_ids});
        config["config"] = json!({"Entrypoint": e.entrypoint, "Labels": e.labels});
        let mut config_d = write_blob(&layout, config.to_string().as_bytes());
        config_d["mediaType"] = json!("application/vnd.oci.image.config.v1+json");
        let manifest = json!({
            "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": config_d, "layers": descriptors
        });
        let mut d = write_blob(&layout, manifest.to_string().as_bytes());
        d["mediaType"] = json!("application/vnd.oci.image.manifest.v1+json");
        d["platform"] = platform;
        manifests.push(d);
    }
    let index = json!({
        "schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": manifests
    });
    let mut index_d = write_blob(&layout, index.to_string().as_bytes());
    index_d["mediaType"] = json!("application/vnd.oci.image.index.v1+json");
    index_d["annotations"] = json!({"org.opencontainers.image.ref.name": "v1"});
    let top = json!({"schemaVersion": 2, "manifests": [index_d]});
    std::fs::write(layout.join("index.json"), top.to_string()).unwrap();
    layout
}

const POLICY: &str = "name: t\nlinux:\n  architectures: [amd64, arm64]\n  runtimes: [cri-o]\nwindows:\n  architectures: [amd64]\n  builds: [17763]\nruntimes: [containerd-1.7]\ndeep:\n  linux: true\n";
const WINDOWS_ONLY: &str =
    "name: w\nwindows:\n  architectures: [amd64]\n  builds: [17763]\nruntimes: [containerd-1.7]\n";

/// Pushes the layout to the registry and runs `verify --deep` under `policy` (text, plus
/// `--format json`): the exit code, the JSON document and the text report.
pub(crate) fn verify(
    registry: &Registry,
    dir: &Path,
    layout: &Path,
    policy: &str,
) -> (i32, Value, String) {
    let name = layout.file_name().unwrap().to_string_lossy().into_owned();
    registry.push_layout(layout, &name, "v1");
    let reference = registry.docker_ref(&name, "v1");
    let policy_file = dir.join(format!("{name}.yaml"));
    std::fs::write(&policy_file, policy).unwrap();
    let run = |format: &str| {
        imgcheck()
            .args([
                "verify",
                &reference,
                "--deep",
                "--retries",
                "0",
                "--format",
                format,
            ])
            .arg("--policy")
            .arg(&policy_file)
            .output()
            .unwrap()
    };
    let json_out = run("json");
    let stderr = String::from_utf8_lossy(&json_out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    let doc: Value = serde_json::from_slice(&json_out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {stderr}"));
    assert_conforms("imagesReport", &name, &doc);
    let text = String::from_utf8_lossy(&run("text").stdout).into_owned();
    (json_out.status.code().unwrap(), doc, text)
}

/// The (rule, message) pairs of the first image's findings, infos left out.
pub(crate) fn problems(doc: &Value) -> Vec<(String, String)> {
    doc["images"][0]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["severity"] != "info")
        .map(|f| {
            let s = |k: &str| f[k].as_str().unwrap_or_default().to_string();
            (s("rule"), s("message"))
        })
        .collect()
}

pub(crate) fn rules_of(doc: &Value) -> Vec<String> {
    problems(doc).into_iter().map(|(r, _)| r).collect()
}

/// A Windows entry whose entrypoint is a Linux ELF (a cross-compile without GOOS=windows);
/// an arm64 entry carrying the amd64 build: both `binary-platform-mismatch`, naming the
/// entry, the path and what the file is. The right builds pass, and their Go build
/// information (GOOS/GOARCH, vcs.revision) is in the `binaries` block.
#[test]
fn programs_built_for_another_platform_fail() {
    let p = programs();
    let dir = tempfile::tempdir().unwrap();
    let registry = Registry::start();
    let entries = |windows_exe: &[u8], arm64: &[u8]| {
        vec![
            Entry {
                os: "linux",
                arch: "amd64",
                entrypoint: vec!["/usr/bin/driver"],
                labels: json!({}),
                layers: vec![layer(&[("usr/bin/driver", &p.go_linux_amd64)])],
            },
            Entry {
                os: "linux",
                arch: "arm64",
                entrypoint: vec!["driver"],
                labels: json!({}),
                layers: vec![layer(&[("usr/local/bin/driver", arm64)])],
            },
            Entry {
                os: "windows",
                arch: "amd64",
                entrypoint: vec!["C:\\app\\driver.exe"],
                labels: json!({}),
                layers: vec![
                    windows_base(),
                    layer(&[("Files/app/driver.exe", windows_exe)]),
                ],
            },
        ]
    };
    let bad = list_layout(
        dir.path(),
        "wrong",
        &entries(&p.go_linux_amd64, &p.go_linux_amd64),
    );
    let (code, doc, text) = verify(&registry, dir.path(), &bad, POLICY);
    assert_eq!(code, 1, "{doc:#}");
    let found = problems(&doc);
    assert_eq!(
        rules_of(&doc),
        ["binary-platform-mismatch", "binary-platform-mismatch"],
        "{found:?}"
    );
    assert!(
        found
            .iter()
            .any(|(_, m)| m.starts_with("windows/amd64:10.0.17763.1 entry")
                && m.contains("runs C:\\app\\driver.exe: ELF 64-bit LSB x86-64")),
        "{found:?}"
    );
    assert!(
        found.iter().any(|(_, m)| m.starts_with("linux/arm64 entry")
            && m.contains("runs /usr/local/bin/driver: ELF 64-bit LSB x86-64")),
        "{found:?}"
    );
    assert!(
        text.contains(
            "  program  windows/amd64:10.0.17763.1  C:\\app\\driver.exe (ELF 64-bit LSB x86-64"
        ),
        "{text}"
    );

    let good = list_layout(
        dir.path(),
        "right",
        &entries(&p.go_windows, &p.go_linux_arm64),
    );
    let (code, doc, _) = verify(&registry, dir.path(), &good, POLICY);
    assert_eq!((code, rules_of(&doc)), (0, vec![]), "{doc:#}");
    let binaries = doc["images"][0]["binaries"].as_array().unwrap();
    let windows = binaries
        .iter()
        .find(|b| b["entry"] == "windows/amd64:10.0.17763.1")
        .unwrap();
    let program = &windows["programs"][0];
    assert_eq!(program["format"], "pe", "{program:#}");
    assert_eq!(program["machine"], "AMD64");
    assert_eq!(program["go"]["goos"], "windows");
    assert_eq!(program["go"]["revision"], p.revision.as_str());
    assert_eq!(program["dlls_missing"], json!([]), "{program:#}");
    let arm = binaries
        .iter()
        .find(|b| b["entry"] == "linux/arm64")
        .unwrap();
    assert_eq!(arm["programs"][0]["looked_up"][0], "/usr/local/sbin/driver");
    assert_eq!(arm["programs"][0]["path"], "/usr/local/bin/driver");
    assert_eq!(arm["programs"][0]["go"]["goarch"], "arm64");
}

/// The driver imports NETAPI32.dll, which the nanoserver-like base lacks: `dll-missing`;
/// once the DLL is copied in next to it (the servercore → nanoserver pattern of
/// buildah/azurefile-csi) the list passes. A name no layer holds: `entrypoint-missing`.
#[test]
fn a_dll_the_base_lacks_fails_until_it_is_copied_in() {
    let p = programs();
    let dir = tempfile::tempdir().unwrap();
    let registry = Registry::start();
    let windows = |app: Vec<u8>, entrypoint: &'static str| Entry {
        os: "windows",
        arch: "amd64",
        entrypoint: vec![entrypoint],
        labels: json!({}),
        layers: vec![windows_base(), app],
    };
    let lacking = list_layout(
        dir.path(),
        "lacking",
        &[windows(
            layer(&[("Files/app/driver.exe", &p.netapi_exe)]),
            "C:\\app\\driver.exe",
        )],
    );
    let (code, doc, _) = verify(&registry, dir.path(), &lacking, WINDOWS_ONLY);
    let found = problems(&doc);
    assert_eq!(
        (code, rules_of(&doc)),
        (1, vec!["dll-missing".to_string()]),
        "{found:?}"
    );
    assert!(found[0].1.contains("imports NETAPI32.dll"), "{found:?}");

    let copied = list_layout(
        dir.path(),
        "copied",
        &[windows(
            layer(&[
                ("Files/app/driver.exe", &p.netapi_exe),
                ("Files/Windows/System32/netapi32.dll", b"MZ"),
            ]),
            "C:\\app\\driver.exe",
        )],
    );
    let (code, doc, _) = verify(&registry, dir.path(), &copied, WINDOWS_ONLY);
    assert_eq!((code, rules_of(&doc)), (0, vec![]), "{doc:#}");

    let missing = list_layout(
        dir.path(),
        "missing",
        &[windows(
            layer(&[("Files/app/driver.exe", &p.netapi_exe)]),
            "driver",
        )],
    );
    let (code, doc, _) = verify(&registry, dir.path(), &missing, WINDOWS_ONLY);
    let found = problems(&doc);
    assert_eq!(
        (code, rules_of(&doc)),
        (1, vec!["entrypoint-missing".to_string()]),
        "{found:?}"
    );
    assert!(
        found[0]
            .1
            .contains("looked up: C:\\driver.exe, C:\\windows\\system32\\driver.exe"),
        "{found:?}"
    );
}

/// Linux and Windows entries labelled with different revisions: `source-skew` (a warning:
/// the list passes), naming each entry's revision; `source_skew: error` fails it.
#[test]
fn entries_from_different_revisions_are_source_skew() {
    let p = programs();
    let dir = tempfile::tempdir().unwrap();
    let registry = Registry::start();
    let rev = |r: &str| json!({"org.opencontainers.image.revision": r});
    let entries = vec![
        Entry {
            os: "linux",
            arch: "amd64",
            entrypoint: vec!["/driver"],
            labels: rev("1111111aaaa"),
            layers: vec![layer(&[("driver", &p.go_linux_amd64)])],
        },
        Entry {
            os: "linux",
            arch: "arm64",
            entrypoint: vec!["/driver"],
            labels: rev("1111111aaaa"),
            layers: vec![layer(&[("driver", &p.go_linux_arm64)])],
        },
        Entry {
            os: "windows",
            arch: "amd64",
            entrypoint: vec!["C:\\driver.exe"],
            labels: rev("2222222bbbb"),
            layers: vec![
                windows_base(),
                layer(&[("Files/driver.exe", &p.go_windows)]),
            ],
        },
    ];
    let layout = list_layout(dir.path(), "skew", &entries);
    let (code, doc, _) = verify(&registry, dir.path(), &layout, POLICY);
    let found = problems(&doc);
    assert_eq!(
        (code, rules_of(&doc)),
        (0, vec!["source-skew".to_string()]),
        "{found:?}"
    );
    let message = &found[0].1;
    assert!(
        message.contains("1111111aaaa (org.opencontainers.image.revision)")
            && message.contains("2222222bbbb")
            && message.contains(&format!("{} (go vcs.revision of /driver)", p.revision)),
        "{message}"
    );
    let strict = format!("{POLICY}source_skew: error\n");
    let (code, doc, _) = verify(&registry, dir.path(), &layout, &strict);
    assert_eq!(
        (code, rules_of(&doc)),
        (1, vec!["source-skew".to_string()]),
        "{doc:#}"
    );
}
