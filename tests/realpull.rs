//! Issue 33, "Done when": `resolve` says what the real programs do. Debian's containerd 1.6.20
//! (`ctr` against a `containerd` daemon this test starts, its root, state and socket under a
//! temporary folder) and skopeo 1.9.3 (containers/image 5.23, CRI-O's pull library) pull a few
//! list shapes from the test registry; `imgcheck resolve` must name the digest each one pulled,
//! or fail where it failed.
//!
//! What the real pull is:
//!
//! - containerd: `ctr images pull --platform P --snapshotter native`. ctr 1.6
//!   (`cmd/ctr/commands/images/pull.go`) fetches with `platforms.Any(P)` and then unpacks
//!   through `containerd.NewImageWithPlatform(client, img, platforms.Only(P))`: the unpack reads
//!   the manifest `images/image.go` `Manifest` picks with that matcher (limit 1, the first
//!   candidate only), applies its layers and labels **its config**
//!   `containerd.io/gc.ref.snapshot.native` (`image.go` `Unpack`). The labelled config names
//!   the entry pulled. `platforms.Only` (`platforms/compare.go`) is `Ordered` of the platform's
//!   vector, each matcher from `NewMatcher`, which on a Linux host is `platforms.go`
//!   `matcher.Match`: OS, architecture and variant after `Normalize`, **no `os.version`**.
//!   - `--platform linux/...` is therefore the matcher of a Linux node (`platforms.Default()`
//!     is `Only(DefaultSpec())` there): imgcheck's `containerd-1.6.18` row (1.6.20's).
//!   - `--platform windows/amd64` is not a Windows node's matcher (`defaults_windows.go`
//!     `matchComparer` is built on Windows only): any Windows entry of the architecture
//!     matches and the first in index order wins — the Windows rule of imgcheck's
//!     `containerd-1.4` row (`WindowsVersions::Any`, `Winner::IndexOrder`), which the Windows
//!     rows are compared with (each list has a Windows entry, so that row's `linux/amd64`
//!     fallback never applies).
//! - CRI-O: `skopeo copy` (with `--override-arch`/`--override-variant` for another host) into
//!   `containers-storage:` (vfs driver, root under the temporary folder), which chooses the
//!   instance (`internal/manifest/oci_index.go` `chooseInstance`), reads it as the registry
//!   serves it and stores its layers as CRI-O's pull does; `--digestfile` names the entry
//!   pulled. Compared with imgcheck's `cri-o` row.

use std::collections::BTreeMap;
use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::{Registry, imgcheck};
use crate::selection::{
    ATTESTATION, LINUX_AMD64, WS2019, WS2022, edited_layout, entry, nested_layout,
};

/// The linux/arm64/v8 entry of the `attestation` fixture.
const LINUX_ARM64: &str = "sha256:2570c3debff190e7202c7e08ae622d64735f25ca28755b3d79e91629858d6364";

/// A `containerd` daemon of its own: root, state and socket under a temporary folder; killed
/// when dropped.
struct Containerd {
    child: Child,
    dir: tempfile::TempDir,
}

impl Containerd {
    /// Starts `containerd` (the CRI plugin off: only the content store, the images and the
    /// native snapshotter are used) and waits until `ctr version` answers.
    fn start() -> Containerd {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("config.toml");
        let quoted = |p: PathBuf| serde_json::to_string(&p.to_string_lossy()).unwrap();
        fs::write(
            &config,
            format!(
                "version = 2\nroot = {}\nstate = {}\ndisabled_plugins = [\"io.containerd.grpc.v1.cri\"]\n\
                 [grpc]\n  address = {}\n",
                quoted(dir.path().join("root")),
                quoted(dir.path().join("state")),
                quoted(dir.path().join("c.sock")),
            ),
        )
        .unwrap();
        let log = fs::File::create(dir.path().join("log")).unwrap();
        let child = match Command::new("containerd")
            .arg("--config")
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
        {
            Ok(child) => child,
            Err(e) if e.kind() == ErrorKind::NotFound => panic!(
                "containerd not found: install it with 'apt-get install containerd' (or run scripts/test)"
            ),
            Err(e) => panic!("cannot run containerd: {e}"),
        };
        let daemon = Containerd { child, dir };
        let deadline = Instant::now() + Duration::from_secs(20);
        while !daemon.ctr("default", &["version"]).status.success() {
            assert!(
                Instant::now() < deadline,
                "containerd did not answer within 20 s:\n{}",
                fs::read_to_string(daemon.dir.path().join("log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        daemon
    }

    /// `ctr --address SOCKET --namespace NAMESPACE ARGS...`.
    fn ctr(&self, namespace: &str, args: &[&str]) -> Output {
        let socket = self.dir.path().join("c.sock");
        match Command::new("ctr")
            .arg("--address")
            .arg(&socket)
            .args(["--namespace", namespace])
            .args(args)
            .stdin(Stdio::null())
            .output()
        {
            Ok(out) => out,
            Err(e) if e.kind() == ErrorKind::NotFound => panic!(
                "ctr not found: install it with 'apt-get install containerd' (or run scripts/test)"
            ),
            Err(e) => panic!("cannot run ctr: {e}"),
        }
    }

    /// Pulls `reference` (`HOST:PORT/REPO:TAG`) for `platform` in a namespace of its own (the
    /// labels of one pull do not show in another): the manifest whose config the unpack
    /// labelled, looked up in `configs` (config digest → manifest digest), or the failure.
    fn pull(
        &self,
        namespace: &str,
        reference: &str,
        platform: &str,
        configs: &BTreeMap<String, String>,
    ) -> Result<String, String> {
        let out = self.ctr(
            namespace,
            &[
                "images",
                "pull",
                "--plain-http",
                "--snapshotter",
                "native",
                "--platform",
                platform,
                reference,
            ],
        );
        if !out.status.success() {
            return Err(String::from_utf8_lossy(&out.stderr).trim().to_string());
        }
        let listed = self.ctr(namespace, &["content", "ls"]);
        let listed = String::from_utf8_lossy(&listed.stdout).to_string();
        let unpacked: Vec<&str> = listed
            .lines()
            .filter(|l| l.contains("containerd.io/gc.ref.snapshot.native="))
            .filter_map(|l| l.split_whitespace().next())
            .collect();
        assert_eq!(unpacked.len(), 1, "one config unpacked:\n{listed}");
        Ok(configs
            .get(unpacked[0])
            .unwrap_or_else(|| panic!("config {} of no manifest", unpacked[0]))
            .clone())
    }
}

impl Drop for Containerd {
    fn drop(&mut self) {
        // Also runs while unwinding from a failed test.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `skopeo copy [OVERRIDES] docker://REFERENCE containers-storage:[vfs@ROOT+RUN]NAME`: the
/// digest of the manifest stored, or the failure.
fn skopeo_pull(
    storage: &Path,
    name: &str,
    reference: &str,
    overrides: &[&str],
) -> Result<String, String> {
    let digest_file = storage.join(format!("{name}.digest"));
    let destination = format!(
        "containers-storage:[vfs@{}+{}]{name}:t",
        storage.join("root").display(),
        storage.join("run").display()
    );
    let out = match Command::new("skopeo")
        .args(["--insecure-policy", "copy", "--src-tls-verify=false"])
        .args(overrides)
        .arg("--digestfile")
        .arg(&digest_file)
        .arg(format!("docker://{reference}"))
        .arg(destination)
        .stdin(Stdio::null())
        .output()
    {
        Ok(out) => out,
        Err(e) if e.kind() == ErrorKind::NotFound => {
            panic!(
                "skopeo not found: install it with 'apt-get install skopeo' (or run scripts/test)"
            )
        }
        Err(e) => panic!("cannot run skopeo: {e}"),
    };
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).trim().to_string());
    }
    Ok(fs::read_to_string(&digest_file).unwrap().trim().to_string())
}

/// `imgcheck resolve`: the digest a node pulls, or why the pull fails (a non-zero exit).
fn predicted(reference: &str, platform: &str, runtime: &str) -> Result<String, String> {
    let out = imgcheck()
        .args([
            "resolve",
            &format!("docker://{reference}"),
            "--platform",
            platform,
        ])
        .args(["--runtime", runtime, "--format", "json"])
        .output()
        .expect("imgcheck runs");
    let stderr = String::from_utf8_lossy(&out.stderr).trim().to_string();
    assert!(!stderr.contains("panicked"), "{stderr}");
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    match (out.status.code(), doc["digest"].as_str()) {
        (Some(0), Some(digest)) => Ok(digest.to_string()),
        (Some(0), None) => panic!("resolve exits 0 without a digest: {doc}\n{stderr}"),
        (code, _) => Err(format!("exit {code:?}: {stderr}")),
    }
}

/// Every image manifest's config in the layouts: config digest → manifest digest.
fn configs_of(layouts: &[PathBuf]) -> BTreeMap<String, String> {
    let mut configs = BTreeMap::new();
    for layout in layouts {
        for blob in fs::read_dir(layout.join("blobs/sha256")).unwrap() {
            let path = blob.unwrap().path();
            let Ok(doc) = serde_json::from_slice::<Value>(&fs::read(&path).unwrap()) else {
                continue;
            };
            if let Some(config) = doc["config"]["digest"].as_str() {
                let name = path.file_name().unwrap().to_string_lossy();
                configs.insert(config.to_string(), format!("sha256:{name}"));
            }
        }
    }
    configs
}

/// Who pulls: containerd with `ctr --platform`, or CRI-O's library with skopeo's overrides.
enum Puller {
    Ctr(&'static str),
    Skopeo(&'static [&'static str]),
}

/// One row: a list shape, the real pull, and the imgcheck host and profile it corresponds to.
struct Row {
    /// Why the real program does what it does (file and function of the deciding project).
    source: &'static str,
    shape: &'static str,
    puller: Puller,
    platform: &'static str,
    runtime: &'static str,
    /// What the real program did when the test was written (`None`: the pull failed).
    pulled: Option<&'static str>,
}

/// The list shapes, pushed to `registry`: shape name → (layout, `HOST:PORT/REPO:t`).
fn shapes(tmp: &Path, registry: &Registry) -> BTreeMap<&'static str, (PathBuf, String)> {
    let mut layouts: Vec<(&'static str, PathBuf)> = Vec::new();
    let mut add = |shape: &'static str, edit: &dyn Fn(&mut Vec<Value>)| {
        layouts.push((shape, edited_layout(tmp, shape, edit)));
    };
    add("plain", &|_| {});
    // WS2022 listed before WS2019, both with os.version.
    add("ws2022-first", &|e| {
        let ws2022 = entry(e, WS2022).clone();
        e.retain(|d| d["digest"] != WS2022);
        e.insert(0, ws2022);
    });
    // The same, neither Windows entry stating an os.version.
    add("no-os-version", &|e| {
        for digest in [WS2019, WS2022] {
            entry(e, digest)["platform"]
                .as_object_mut()
                .unwrap()
                .remove("os.version");
        }
        let ws2022 = entry(e, WS2022).clone();
        e.retain(|d| d["digest"] != WS2022);
        e.insert(0, ws2022);
    });
    // The linux/amd64 descriptor says index; the registry serves an image manifest.
    add("index-type-on-a-manifest", &|e| {
        entry(e, LINUX_AMD64)["mediaType"] = json!("application/vnd.oci.image.index.v1+json");
    });
    // An attestation given linux/amd64 as its platform, the image it attests removed.
    add("attestation-selected", &|e| {
        e.retain(|d| d["digest"] != LINUX_AMD64);
        entry(e, ATTESTATION)["platform"] = json!({"os": "linux", "architecture": "amd64"});
    });
    // A platform-less attestation listed before a platform-less image.
    add("platformless", &|e| {
        let mut attestation = entry(e, ATTESTATION).clone();
        let mut image = entry(e, LINUX_AMD64).clone();
        attestation.as_object_mut().unwrap().remove("platform");
        image.as_object_mut().unwrap().remove("platform");
        *e = vec![attestation, image];
    });
    // Issue 33, item 6: the linux/amd64 entry's architecture written `x86_64`, and its OS
    // left empty.
    add("x86-64-spelling", &|e| {
        entry(e, LINUX_AMD64)["platform"]["architecture"] = json!("x86_64");
    });
    add("empty-os", &|e| {
        entry(e, LINUX_AMD64)["platform"]["os"] = json!("");
    });
    layouts.push(("nested", nested_layout(tmp, "nested")));
    layouts
        .into_iter()
        .map(|(shape, layout)| {
            registry.push_layout(&layout, shape, "t");
            (shape, (layout, format!("{}/{shape}:t", registry.host())))
        })
        .collect()
}

const ARM64: &[&str] = &["--override-arch", "arm64", "--override-variant", "v8"];

fn rows() -> Vec<Row> {
    use Puller::{Ctr, Skopeo};
    let row = |source, shape, puller, platform, runtime, pulled| Row {
        source,
        shape,
        puller,
        platform,
        runtime,
        pulled,
    };
    let (amd64, arm64, ws2019) = ("linux/amd64", "linux/arm64/v8", "windows/amd64:10.0.17763");
    vec![
        row(
            "containerd v1.6 platforms/compare.go Only: the host's own platform",
            "plain",
            Ctr(amd64),
            amd64,
            "containerd-1.6.18",
            Some(LINUX_AMD64),
        ),
        row(
            "containerd v1.6 platforms/compare.go Only (arm64 vector)",
            "plain",
            Ctr(arm64),
            arm64,
            "containerd-1.6.18",
            Some(LINUX_ARM64),
        ),
        row(
            "containers/image platform_matcher.go WantedPlatforms + oci_index.go chooseInstance",
            "plain",
            Skopeo(&[]),
            amd64,
            "cri-o",
            Some(LINUX_AMD64),
        ),
        row(
            "containers/image WantedPlatforms (arch and variant overridden)",
            "plain",
            Skopeo(ARM64),
            arm64,
            "cri-o",
            Some(LINUX_ARM64),
        ),
        row(
            "containerd v1.6 platforms.go matcher.Match on a Linux host reads no os.version; images/image.go Manifest keeps index order",
            "plain",
            Ctr("windows/amd64"),
            ws2019,
            "containerd-1.4",
            Some(WS2019),
        ),
        row(
            "the same: the first Windows entry wins whatever its build",
            "ws2022-first",
            Ctr("windows/amd64"),
            ws2019,
            "containerd-1.4",
            Some(WS2022),
        ),
        row(
            "the same, entries without os.version",
            "no-os-version",
            Ctr("windows/amd64"),
            ws2019,
            "containerd-1.4",
            Some(WS2022),
        ),
        row(
            "containerd v1.6 platforms/database.go normalizeArch (in platforms.go matcher.Match): \
             x86_64 is amd64",
            "x86-64-spelling",
            Ctr(amd64),
            amd64,
            "containerd-1.6.18",
            Some(LINUX_AMD64),
        ),
        row(
            "containers/image platform_matcher.go MatchesPlatform: the architecture compared \
             as written, x86_64 is not amd64",
            "x86-64-spelling",
            Skopeo(&[]),
            amd64,
            "cri-o",
            None,
        ),
        row(
            "containerd v1.6 platforms/database.go normalizeOS: an empty OS is runtime.GOOS, \
             the node's own",
            "empty-os",
            Ctr(amd64),
            amd64,
            "containerd-1.6.18",
            Some(LINUX_AMD64),
        ),
        row(
            "containers/image MatchesPlatform: an empty OS is not linux",
            "empty-os",
            Skopeo(&[]),
            amd64,
            "cri-o",
            None,
        ),
        row(
            "containerd v1.6 images/image.go Manifest descends into a child index",
            "nested",
            Ctr(amd64),
            amd64,
            "containerd-1.6.18",
            Some(LINUX_AMD64),
        ),
        row(
            "containers/image copy: a chosen instance that is a list is refused (manifest.FromBlob)",
            "nested",
            Skopeo(&[]),
            amd64,
            "cri-o",
            None,
        ),
        row(
            "containerd v1.6 images/image.go validateMediaType: expected index but found manifest",
            "index-type-on-a-manifest",
            Ctr(amd64),
            amd64,
            "containerd-1.6.18",
            None,
        ),
        row(
            "containers/image docker_image_src.go GetManifest: the type is the registry's answer's, not the descriptor's",
            "index-type-on-a-manifest",
            Skopeo(&[]),
            amd64,
            "cri-o",
            Some(LINUX_AMD64),
        ),
        row(
            "containerd v1.6 image.go Unpack: an in-toto layer is not a filesystem layer",
            "attestation-selected",
            Ctr(amd64),
            amd64,
            "containerd-1.6.18",
            None,
        ),
        row(
            "containers/image storage destination: an in-toto layer is not a filesystem layer",
            "attestation-selected",
            Skopeo(&[]),
            amd64,
            "cri-o",
            None,
        ),
        row(
            "containerd v1.6 images/image.go Manifest: the first platform-less candidate's config (unknown/unknown) does not match",
            "platformless",
            Ctr(amd64),
            amd64,
            "containerd-1.6.18",
            None,
        ),
        row(
            "containers/image oci_index.go chooseInstance: the first platform-less entry, an attestation, which cannot be stored",
            "platformless",
            Skopeo(&[]),
            amd64,
            "cri-o",
            None,
        ),
    ]
}

#[test]
fn resolve_says_what_containerd_and_cri_o_really_pull() {
    let tmp = tempfile::tempdir().unwrap();
    let registry = Registry::start();
    let shapes = shapes(tmp.path(), &registry);
    let layouts: Vec<PathBuf> = shapes.values().map(|(l, _)| l.clone()).collect();
    let configs = configs_of(&layouts);
    let containerd = Containerd::start();
    let mut wrong = Vec::new();
    for (i, row) in rows().iter().enumerate() {
        let reference = &shapes[row.shape].1;
        let real = match row.puller {
            Puller::Ctr(platform) => {
                containerd.pull(&format!("row{i}"), reference, platform, &configs)
            }
            Puller::Skopeo(overrides) => {
                skopeo_pull(tmp.path(), &format!("row{i}"), reference, overrides)
            }
        };
        let imgcheck = predicted(reference, row.platform, row.runtime);
        if real.as_ref().ok() != imgcheck.as_ref().ok() {
            wrong.push(format!(
                "{} ({} on {}, {}): the real pull gave {real:?}, imgcheck {imgcheck:?}",
                row.source, row.runtime, row.shape, row.platform
            ));
        }
        if real.as_ref().ok().map(String::as_str) != row.pulled {
            wrong.push(format!(
                "{} ({} on {}): the real pull now gives {real:?}, not {:?} as when written",
                row.source, row.runtime, row.shape, row.pulled
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
