//! CSI Proxy compatibility (issue 37, item 2) with real Go programs built here (Debian
//! `golang-go`, GOOS=windows): a stub module with the path of csi-proxy's client module
//! (`github.com/kubernetes-csi/csi-proxy/client`) holding API group packages, and two drivers
//! that require it at v1.0.0 and v1.1.0 through a local `replace` (Go records the required
//! version, then a `=>` line naming the directory). The drivers are pushed as Windows images
//! to a test registry and judged by `verify --deep` against the CSI Proxy release the policy
//! says the nodes run.

use std::path::Path;
use std::process::Command;
use std::sync::OnceLock;

use crate::common::Registry;
use crate::content::{Entry, layer, list_layout, problems, rules_of, verify, windows_base};
use serde_json::{Value, json};

/// The two drivers, built once per test run.
struct Drivers {
    /// Requires the client at v1.0.0; dials disk/v1 and smb/v1.
    v1: Vec<u8>,
    /// Requires the client at v1.1.0; dials filesystem/v2alpha1 and smb/v1.
    v2alpha: Vec<u8>,
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A package of the stub: a request type whose method the driver calls, as generated
/// protobuf code has (kept out of inlining so the linker names it).
fn package(name: &str) -> String {
    format!(
        "package {name}\n\ntype Request struct{{ Path string }}\n\n//go:noinline\nfunc (r *Request) \
         Pipe() string {{ return \"csi-proxy-\" + r.Path }}\n"
    )
}

/// A driver module requiring the client at `version` (replaced by `../stub`), whose main
/// calls the packages `imports` (`api/disk/v1` …).
fn driver_module(dir: &Path, version: &str, imports: &[&str]) {
    write(
        &dir.join("go.mod"),
        &format!(
            "module example.com/driver\n\ngo 1.19\n\nrequire github.com/kubernetes-csi/csi-proxy/client \
             {version}\n\nreplace github.com/kubernetes-csi/csi-proxy/client => ../stub\n"
        ),
    );
    let mut main = String::from("package main\n\nimport (\n\t\"fmt\"\n");
    for (i, p) in imports.iter().enumerate() {
        main.push_str(&format!(
            "\tp{i} \"github.com/kubernetes-csi/csi-proxy/client/{p}\"\n"
        ));
    }
    main.push_str(")\n\nfunc main() {\n");
    for i in 0..imports.len() {
        main.push_str(&format!(
            "\tfmt.Println((&p{i}.Request{{Path: \"x\"}}).Pipe())\n"
        ));
    }
    main.push_str("}\n");
    write(&dir.join("main.go"), &main);
}

fn build(dir: &Path, cache: &Path) -> Vec<u8> {
    let out = dir.join("driver.exe");
    let result = Command::new("go")
        .args(["build", "-o"])
        .arg(&out)
        .arg(".")
        .current_dir(dir)
        .env("GOOS", "windows")
        .env("GOARCH", "amd64")
        .env("CGO_ENABLED", "0")
        .env("GOCACHE", cache)
        .env("GOPATH", cache.join("gopath"))
        .env("GOFLAGS", "-mod=mod")
        .env("GOPROXY", "off")
        .output()
        .unwrap_or_else(|e| panic!("cannot run go ({e}): install the Debian package golang-go"));
    assert!(
        result.status.success(),
        "go build: {}",
        String::from_utf8_lossy(&result.stderr)
    );
    std::fs::read(out).unwrap()
}

fn drivers() -> &'static Drivers {
    static DRIVERS: OnceLock<Drivers> = OnceLock::new();
    DRIVERS.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap().keep();
        let stub = dir.join("stub");
        write(
            &stub.join("go.mod"),
            "module github.com/kubernetes-csi/csi-proxy/client\n\ngo 1.19\n",
        );
        for (path, name) in [
            ("api/disk/v1", "v1"),
            ("api/smb/v1", "v1"),
            ("api/filesystem/v2alpha1", "v2alpha1"),
            ("groups/smb/v1", "v1"),
        ] {
            write(&stub.join(path).join("api.go"), &package(name));
        }
        let cache = std::env::temp_dir().join("imgcheck-csiproxy-gocache");
        driver_module(&dir.join("v1"), "v1.0.0", &["api/disk/v1", "api/smb/v1"]);
        driver_module(
            &dir.join("v2alpha"),
            "v1.1.0",
            &["api/filesystem/v2alpha1", "groups/smb/v1"],
        );
        Drivers {
            v1: build(&dir.join("v1"), &cache),
            v2alpha: build(&dir.join("v2alpha"), &cache),
        }
    })
}

/// The probe reads the dep line with its `=>` replacement and the group packages.
#[test]
fn the_probe_reads_the_client_and_its_groups() {
    let d = drivers();
    for (bytes, version, apis) in [
        (&d.v1, "v1.0.0", vec!["disk/v1", "smb/v1"]),
        (&d.v2alpha, "v1.1.0", vec!["filesystem/v2alpha1", "smb/v1"]),
    ] {
        let info = imgcheck::binary::parse(bytes);
        let go = info.go.as_ref().expect("Go build information");
        let client = go.csi_proxy_client().expect("the client's dep line");
        assert_eq!(client.version, version);
        assert_eq!(client.built_version(), version);
        let replace = client.replace.as_ref().expect("the => line");
        assert_eq!(replace.path, "../stub");
        assert!(replace.is_directory());
        assert_eq!(go.csi_proxy_apis, apis, "{go:?}");
        assert!(info.incomplete.is_empty(), "{:?}", info.incomplete);
    }
}

/// A Windows-only image running `exe`.
fn image(exe: &[u8]) -> Vec<Entry> {
    vec![Entry {
        os: "windows",
        arch: "amd64",
        entrypoint: vec!["C:\\driver.exe"],
        labels: json!({}),
        layers: vec![windows_base(), layer(&[("Files/driver.exe", exe)])],
    }]
}

/// A Windows-only policy; `csi_proxy` is its `windows.csi_proxy` section (indented).
fn policy(csi_proxy: &str) -> String {
    format!(
        "name: w\nwindows:\n  architectures: [amd64]\n  builds: [17763]\n{csi_proxy}runtimes: \
         [containerd-1.7]\n"
    )
}

fn csi_proxy_block(doc: &Value) -> Value {
    doc["images"][0]["binaries"][0]["programs"][0]["go"]["csi_proxy"].clone()
}

/// The v1 driver on nodes running v1.0.2 passes, its client and groups in the `binaries`
/// block; the v2alpha1 driver fails there (`csi-proxy-incompatible`, both sides named, in
/// JSON and text) and passes on v1.1.0; without the nodes' release, `csi-proxy-unknown`.
#[test]
fn drivers_against_the_nodes_csi_proxy() {
    let d = drivers();
    let dir = tempfile::tempdir().unwrap();
    let registry = Registry::start();
    let v1 = list_layout(dir.path(), "driver-v1", &image(&d.v1));
    let v2alpha = list_layout(dir.path(), "driver-v2alpha", &image(&d.v2alpha));
    let at = |v: &str| policy(&format!("  csi_proxy:\n    version: {v}\n"));

    let (code, doc, _) = verify(&registry, dir.path(), &v1, &at("v1.0.2"));
    assert_eq!((code, rules_of(&doc)), (0, vec![]), "{doc:#}");
    assert_eq!(
        csi_proxy_block(&doc),
        json!({"client": "github.com/kubernetes-csi/csi-proxy/client v1.0.0 => ../stub",
               "version": "v1.0.0", "apis": ["disk/v1", "smb/v1"]})
    );

    let (code, doc, text) = verify(&registry, dir.path(), &v2alpha, &at("v1.0.2"));
    assert_eq!(code, 1, "{doc:#}");
    let found = problems(&doc);
    assert_eq!(rules_of(&doc), ["csi-proxy-incompatible"], "{found:?}");
    let message = &found[0].1;
    for part in [
        "runs C:\\driver.exe, built with github.com/kubernetes-csi/csi-proxy/client v1.1.0 => ../stub",
        "embedding the CSI Proxy API groups filesystem/v2alpha1, smb/v1",
        "the nodes' CSI Proxy v1.0.2 (policy windows.csi_proxy.version) serves filesystem \
         v1alpha1, v1beta1, v1beta2, v1; smb v1alpha1, v1beta1, v1beta2, v1, but none of \
         filesystem/v2alpha1",
    ] {
        assert!(message.contains(part), "{message}");
    }
    assert!(text.contains("csi-proxy-incompatible"), "{text}");
    assert!(text.contains("but none of filesystem/v2alpha1"), "{text}");

    let (code, doc, _) = verify(&registry, dir.path(), &v2alpha, &at("v1.1.0"));
    assert_eq!((code, rules_of(&doc)), (0, vec![]), "{doc:#}");

    let (code, doc, _) = verify(&registry, dir.path(), &v1, &policy(""));
    assert_eq!(code, 0, "a warning: {doc:#}");
    assert_eq!(rules_of(&doc), ["csi-proxy-unknown"]);
    assert!(
        problems(&doc)[0]
            .1
            .contains("the CSI Proxy release the Windows nodes run is not known"),
        "{doc:#}"
    );
}

/// The policy's per-driver minimum, keyed by the image's name (its repository's last path
/// component): below it, `csi-proxy-incompatible` even though the groups are served.
#[test]
fn a_driver_minimum_above_the_nodes_release_fails() {
    let d = drivers();
    let dir = tempfile::tempdir().unwrap();
    let registry = Registry::start();
    let v1 = list_layout(dir.path(), "azure-file-csi-driver", &image(&d.v1));
    let section =
        "  csi_proxy:\n    version: v1.0.2\n    minimum:\n      azure-file-csi-driver: v1.1.0\n";
    let (code, doc, _) = verify(&registry, dir.path(), &v1, &policy(section));
    assert_eq!(code, 1, "{doc:#}");
    assert_eq!(rules_of(&doc), ["csi-proxy-incompatible"]);
    assert!(
        problems(&doc)[0]
            .1
            .contains("azure-file-csi-driver needs CSI Proxy v1.1.0 or later"),
        "{doc:#}"
    );
}

/// A zip archive of `files`, stored (not compressed), as Go's module zips may be
/// (APPNOTE.TXT: local headers, the central directory, its end record).
fn zip(files: &[(String, String)]) -> Vec<u8> {
    let (mut out, mut central) = (Vec::new(), Vec::new());
    let u16le = |v: usize| u16::try_from(v).unwrap().to_le_bytes();
    let u32le = |v: usize| u32::try_from(v).unwrap().to_le_bytes();
    for (name, data) in files {
        let mut crc = flate2::Crc::new();
        crc.update(data.as_bytes());
        let fixed = [
            &[20, 0, 0, 0, 0, 0, 0, 0, 0, 0][..],
            &crc.sum().to_le_bytes(),
            &u32le(data.len()),
            &u32le(data.len()),
            &u16le(name.len()),
            &[0, 0],
        ]
        .concat();
        let offset = out.len();
        out.extend_from_slice(b"PK\x03\x04");
        out.extend_from_slice(&fixed);
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(data.as_bytes());
        central.extend_from_slice(b"PK\x01\x02\x14\x00");
        central.extend_from_slice(&fixed);
        // Comment length, disk number, internal attributes; external attributes.
        central.extend_from_slice(&[0; 6]);
        central.extend_from_slice(&u32le(0));
        central.extend_from_slice(&u32le(offset));
        central.extend_from_slice(name.as_bytes());
    }
    let at = out.len();
    out.extend_from_slice(&central);
    out.extend_from_slice(b"PK\x05\x06\0\0\0\0");
    out.extend_from_slice(&u16le(files.len()));
    out.extend_from_slice(&u16le(files.len()));
    out.extend_from_slice(&u32le(central.len()));
    out.extend_from_slice(&u32le(at));
    out.extend_from_slice(&[0, 0]);
    out
}

/// csi-proxy.exe as a release build: `go install MODULE/cmd/csi-proxy@v1.0.2` from a module
/// proxy directory (GOPROXY=file://), so its build information's `mod` line names the
/// release, as a build of a tagged module version does (a local build says `(devel)`).
fn proxy_exe() -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap().keep();
    let version = "v1.0.2";
    let module = "github.com/kubernetes-csi/csi-proxy";
    let at = dir.join("proxy").join(module).join("@v");
    let go_mod = format!("module {module}\n\ngo 1.19\n");
    let main = "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"csi-proxy\") }\n";
    write(&at.join("list"), &format!("{version}\n"));
    write(
        &at.join(format!("{version}.info")),
        &format!("{{\"Version\":\"{version}\",\"Time\":\"2021-06-01T00:00:00Z\"}}"),
    );
    write(&at.join(format!("{version}.mod")), &go_mod);
    let files = [
        (format!("{module}@{version}/go.mod"), go_mod.clone()),
        (
            format!("{module}@{version}/cmd/csi-proxy/main.go"),
            main.to_string(),
        ),
    ];
    std::fs::write(at.join(format!("{version}.zip")), zip(&files)).unwrap();
    let gopath = dir.join("gopath");
    let result = Command::new("go")
        .args(["install", &format!("{module}/cmd/csi-proxy@{version}")])
        .current_dir(&dir)
        .env("GOOS", "windows")
        .env("GOARCH", "amd64")
        .env("CGO_ENABLED", "0")
        .env("GOPATH", &gopath)
        .env(
            "GOCACHE",
            std::env::temp_dir().join("imgcheck-csiproxy-gocache"),
        )
        .env("GOPROXY", format!("file://{}", dir.join("proxy").display()))
        .env("GOSUMDB", "off")
        .env("GOFLAGS", "-mod=mod")
        .output()
        .unwrap_or_else(|e| panic!("cannot run go ({e}): install the Debian package golang-go"));
    assert!(
        result.status.success(),
        "go install: {}",
        String::from_utf8_lossy(&result.stderr)
    );
    std::fs::read(gopath.join("bin/windows_amd64/csi-proxy.exe")).unwrap()
}

/// Without `windows.csi_proxy.version`, the csi-proxy HostProcess DaemonSet of
/// `--from-manifests` names the nodes' release under `--deep`: its program is
/// github.com/kubernetes-csi/csi-proxy v1.0.2, which serves no filesystem/v2alpha1, so the
/// v2alpha1 driver's DaemonSet fails and a note says where the release was read.
#[test]
fn the_csi_proxy_daemonset_names_the_nodes_release() {
    let d = drivers();
    let dir = tempfile::tempdir().unwrap();
    let registry = Registry::start();
    let proxy = list_layout(
        dir.path(),
        "csi-proxy",
        &[Entry {
            entrypoint: vec!["C:\\csi-proxy.exe"],
            layers: vec![
                windows_base(),
                layer(&[("Files/csi-proxy.exe", &proxy_exe())]),
            ],
            ..image(&d.v1).remove(0)
        }],
    );
    let driver = list_layout(dir.path(), "driver-v2alpha", &image(&d.v2alpha));
    registry.push_layout(&proxy, "csi-proxy", "v1");
    registry.push_layout(&driver, "driver-v2alpha", "v1");
    let manifests = [
        crate::cluster::daemonset(
            "csi-proxy",
            "windows",
            true,
            &[("csi-proxy", &format!("{}/csi-proxy:v1", registry.host()))],
        ),
        crate::cluster::daemonset(
            "driver-node-windows",
            "windows",
            false,
            &[(
                "csi-driver",
                &format!("{}/driver-v2alpha:v1", registry.host()),
            )],
        ),
    ]
    .join("---\n");
    let file = dir.path().join("ds.yaml");
    std::fs::write(&file, manifests).unwrap();
    let policy_file = dir.path().join("policy.yaml");
    std::fs::write(&policy_file, policy("")).unwrap();
    let out = crate::common::imgcheck()
        .args(["verify", "--deep", "--retries", "0", "--format", "json"])
        .arg("--from-manifests")
        .arg(&file)
        .arg("--policy")
        .arg(&policy_file)
        .output()
        .unwrap();
    let doc: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(out.status.code(), Some(1), "{doc:#}");
    let images = doc["images"].as_array().unwrap();
    let rules = |i: usize| -> Vec<&str> {
        images[i]["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["severity"] != "info")
            .map(|f| f["rule"].as_str().unwrap())
            .collect()
    };
    assert_eq!(rules(0), Vec::<&str>::new(), "the proxy itself: {doc:#}");
    assert_eq!(rules(1), ["csi-proxy-incompatible"], "{doc:#}");
    let message = images[1]["findings"][0]["message"].as_str().unwrap();
    assert!(
        message.contains(
            "the nodes' CSI Proxy v1.0.2 (DaemonSet openshift-cluster-csi-drivers/csi-proxy"
        ) && message.contains("C:\\csi-proxy.exe is github.com/kubernetes-csi/csi-proxy v1.0.2"),
        "{message}"
    );
    let notes = doc["notes"].to_string();
    assert!(
        notes.contains("the Windows nodes run CSI Proxy v1.0.2"),
        "{doc:#}"
    );
}
