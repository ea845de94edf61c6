//! Hostile answers and content: bodies over the caps are refused while streaming (never
//! buffered whole), and foreign layers' `urls` are never fetched — so never with the
//! registry's credentials. Hostile or mistaken inputs: deeply nested YAML is refused before
//! the parser's quadratic work, a layout path without `oci:` never reaches the network.

use crate::common::proxy::{Fault, FaultProxy, Match, Rule};
use crate::common::{Registry, fixture, imgcheck, openshift_without_linux_deep};
use serde_json::Value;

const MIB: usize = 1024 * 1024;

fn verify(reference: &str, extra: &[&str]) -> (i32, Value, String) {
    let out = imgcheck()
        .args([
            "verify",
            reference,
            "--format",
            "json",
            "--stats",
            "--retries",
            "1",
        ])
        .args(extra)
        .output()
        .expect("imgcheck runs");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!stderr.contains("panicked"), "{stderr}");
    let doc: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {stderr}"));
    (out.status.code().expect("exit code"), doc, stderr)
}

/// Body bytes imgcheck received, from `--stats`.
fn bytes_received(stderr: &str) -> usize {
    let at = stderr.find(" bytes;").expect("stats line");
    stderr[..at]
        .rsplit(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .expect("byte count")
}

#[test]
fn oversized_bodies_are_refused_while_streaming() {
    let registry = Registry::start();
    registry.push_layout(&fixture("good"), "csi/driver", "v1");
    for (on, declare, what) in [
        (
            Match::PathContains("/manifests/v1".into()),
            false,
            "top index, chunked",
        ),
        (
            Match::PathContains("/manifests/sha256:".into()),
            false,
            "child manifest, chunked",
        ),
        (Match::Blobs, false, "config, chunked"),
        (Match::Manifests, true, "top index, declared"),
    ] {
        let proxy = FaultProxy::start(
            &registry.base_url(),
            vec![Rule::always(
                on,
                Fault::Huge {
                    size: 512 * MIB,
                    declare,
                },
            )],
        );
        let (code, doc, stderr) = verify(&format!("{}/csi/driver:v1", proxy.host()), &[]);
        let image = &doc["images"][0];
        assert_ne!(image["verdict"], "pass", "{what}: {doc:#}");
        assert!(code == 1 || code == 3, "{what}: exit {code}");
        assert!(
            doc.to_string().contains("-byte limit"),
            "{what}: names the limit: {doc:#}"
        );
        // Each body stopped at its cap (4 MiB manifests, 8 MiB for each of the 4 configs),
        // not after reading 512 MiB.
        let received = bytes_received(&stderr);
        assert!(received <= 5 * 8 * MIB, "{what}: read {received} bytes");
        assert!(
            proxy.huge_bytes_sent() < 128 * MIB,
            "{what}: the proxy got to write {} bytes",
            proxy.huge_bytes_sent()
        );
        // Too large is not a fault that heals: no retries.
        assert!(stderr.contains("; 0 retries;"), "{what}: {stderr}");
    }
}

#[test]
fn foreign_layer_urls_are_never_fetched() {
    let registry = Registry::start();
    registry.push_layout(&fixture("foreign-layer"), "win/base", "v1");
    let proxy = FaultProxy::start(&registry.base_url(), vec![]);
    let dir = tempfile::tempdir().unwrap();
    let policy = openshift_without_linux_deep(dir.path());
    let (code, doc, stderr) = verify(
        &format!("{}/win/base:v1", proxy.host()),
        &[
            "--deep",
            "--creds",
            "someone:Foreign-Secret-1",
            "--policy",
            &policy,
        ],
    );
    assert_eq!(code, 0, "{doc:#}\n{stderr}");
    // The foreign layers' digests, from the fixture.
    let blobs = fixture("foreign-layer").join("blobs/sha256");
    let mut foreign = Vec::new();
    for entry in std::fs::read_dir(&blobs).unwrap().flatten() {
        let Ok(v) = serde_json::from_slice::<Value>(&std::fs::read(entry.path()).unwrap()) else {
            continue;
        };
        for layer in v["layers"].as_array().into_iter().flatten() {
            if layer["urls"].as_array().is_some_and(|u| !u.is_empty()) {
                foreign.push(layer["digest"].as_str().unwrap().to_string());
            }
        }
    }
    assert!(!foreign.is_empty(), "the fixture has foreign layers");
    for s in proxy.seen() {
        for d in &foreign {
            assert!(
                !s.request.contains(d.as_str()),
                "fetched a foreign layer: {s:?}"
            );
        }
    }
    let rules: Vec<&str> = doc["images"][0]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["rule"].as_str().unwrap())
        .collect();
    assert!(rules.contains(&"foreign-layer"), "{doc:#}");
    assert!(!doc.to_string().contains("Foreign-Secret-1") && !stderr.contains("Foreign-Secret-1"));
}

/// 200 KB of nested flow collections in every YAML input (policy, IDMS, ImageSetConfiguration)
/// is refused at once with an error naming the file and the nesting (it took libyaml 20–49 s
/// of quadratic scanning before): exit 2, and never a verdict.
#[test]
fn deeply_nested_yaml_inputs_are_refused_naming_the_problem() {
    let dir = tempfile::tempdir().unwrap();
    let n = 50_000;
    let nested = [
        ("maps", format!("{}1{}", "{a: ".repeat(n), "}".repeat(n))),
        (
            "lists",
            format!("{}{}", "[".repeat(2 * n), "]".repeat(2 * n)),
        ),
    ];
    let good = format!("oci:{}", fixture("good").display());
    for (shape, body) in &nested {
        let policy = dir.path().join(format!("{shape}-policy.yaml"));
        std::fs::write(&policy, format!("name: deep\nlinux: {body}\n")).unwrap();
        let idms = dir.path().join(format!("{shape}-idms.yaml"));
        std::fs::write(
            &idms,
            format!(
                "apiVersion: config.openshift.io/v1\nkind: ImageDigestMirrorSet\nspec: {body}\n"
            ),
        )
        .unwrap();
        let imageset = dir.path().join(format!("{shape}-imageset.yaml"));
        std::fs::write(
            &imageset,
            format!("kind: ImageSetConfiguration\napiVersion: mirror.openshift.io/v2alpha1\nmirror: {body}\n"),
        )
        .unwrap();
        assert!(body.len() >= 200_000);
        let runs: [(&std::path::Path, Vec<String>); 3] = [
            (
                &policy,
                vec![
                    "verify".into(),
                    good.clone(),
                    "--policy".into(),
                    policy.display().to_string(),
                ],
            ),
            (
                &idms,
                vec![
                    "mirror-check".into(),
                    good.clone(),
                    "--idms".into(),
                    idms.display().to_string(),
                ],
            ),
            (
                &imageset,
                vec![
                    "verify".into(),
                    "--from-imageset".into(),
                    imageset.display().to_string(),
                ],
            ),
        ];
        for (file, args) in runs {
            let out = imgcheck().args(&args).output().expect("imgcheck runs");
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(!stderr.contains("panicked"), "{stderr}");
            assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
            assert!(
                stderr.contains(&file.display().to_string())
                    && stderr.contains("nested more than 64 levels"),
                "{args:?}: the file and the problem are named: {stderr}"
            );
        }
    }
}

/// A layout path typed without `oci:` (relative, `./`, absolute) is refused before any
/// network with "did you mean oci:PATH?" (exit 2), instead of asking Docker Hub for it.
#[test]
fn layout_paths_without_oci_get_a_hint_and_no_network() {
    let absolute = fixture("good").display().to_string();
    for path in [
        "fixtures/layouts/good".to_string(),
        "./fixtures/layouts/good".to_string(),
        absolute,
    ] {
        let out = imgcheck()
            .args(["verify", &path, "--retries", "0", "--timeout", "5s"])
            .output()
            .expect("imgcheck runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{path}: {stderr}");
        assert!(
            stderr.contains(&format!("did you mean oci:{path}?")),
            "{path}: {stderr}"
        );
        assert!(!stderr.contains("docker.io"), "{path}: {stderr}");
    }
}

/// Issue 22, item 5: `--nodes /dev/zero` and `--from-manifests /dev/zero` grew to 2 GiB.
/// Every input file is read through one capped reader: past `--max-input-size` (default
/// 256 MiB) it is refused at once, exit 2, naming the file and the limit.
#[test]
fn endless_input_files_are_refused_at_the_size_limit() {
    let good = format!("oci:{}", fixture("good").display());
    let runs: [(Vec<&str>, &str); 4] = [
        (vec!["verify", "--nodes", "/dev/zero", &good], "256 MiB"),
        (
            vec![
                "verify",
                "--from-manifests",
                "/dev/zero",
                "--max-input-size",
                "1MiB",
            ],
            "1 MiB",
        ),
        (
            vec![
                "verify",
                "--from-file",
                "/dev/zero",
                "--max-input-size",
                "64K",
            ],
            "64 KiB",
        ),
        (
            vec![
                "resolve",
                &good,
                "--nodes",
                "/dev/zero",
                "--max-input-size",
                "1M",
            ],
            "1 MiB",
        ),
    ];
    for (args, limit) in runs {
        let out = imgcheck().args(&args).output().expect("imgcheck runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains("/dev/zero")
                && stderr.contains(&format!("larger than the input limit of {limit}"))
                && stderr.contains("--max-input-size"),
            "{args:?}: {stderr}"
        );
    }
}

/// Issue 22, item 9: input kubectl accepts — a UTF-8 byte-order mark (node list, pod
/// templates) and YAML merge keys (`<<: *defaults`) — was refused with "kind: missing" /
/// "image: missing"; it is read as kubectl reads it.
#[test]
fn a_byte_order_mark_and_merge_keys_are_read_as_kubectl_reads_them() {
    let registry = Registry::start();
    registry.push_layout(&fixture("good"), "good", "v1");
    let good = registry.docker_ref("good", "v1");
    let good = good.trim_start_matches("docker://");
    let dir = tempfile::tempdir().unwrap();
    let bom = |text: &str| [b"\xEF\xBB\xBF".as_slice(), text.as_bytes()].concat();
    let nodes = dir.path().join("nodes.json");
    let cluster =
        std::fs::read_to_string(crate::common::fixtures_dir().join("nodes/ocp-wmco.json"));
    std::fs::write(&nodes, bom(&cluster.unwrap())).unwrap();
    let pods = dir.path().join("pods.yaml");
    let pod = format!(
        "kind: Pod\napiVersion: v1\nmetadata: {{name: p}}\nspec:\n  nodeSelector: {{kubernetes.io/os: windows}}\n  \
         tolerations: [{{key: os, operator: Equal, value: Windows, effect: NoSchedule}}]\n  \
         containers:\n  - &c {{name: a, image: '{good}'}}\n  - <<: *c\n    name: b\n"
    );
    std::fs::write(&pods, bom(&pod)).unwrap();
    let (nodes, pods) = (nodes.display().to_string(), pods.display().to_string());
    let out = imgcheck()
        .args([
            "verify",
            "--nodes",
            &nodes,
            "--from-manifests",
            &pods,
            "--format",
            "json",
        ])
        .output()
        .expect("imgcheck runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let origins = doc["images"][0]["origins"].as_array().map_or(0, Vec::len);
    assert_eq!(
        origins, 2,
        "both containers, the second by its merge key: {doc}"
    );
}

/// Issue 22, item 3: `--timeout` counts from the start of the run and bounds reading the
/// inputs too. A pipe that never ends (a FIFO whose writer stays open and writes nothing) as
/// the node list or a reference list used to hang the run forever: the deadline only started
/// when the session was made, after every input was read. Now the run stops at the deadline
/// with the timeout error (exit 3, as for any check the deadline cut off) naming the input.
#[test]
fn timeout_stops_a_run_reading_a_pipe_that_never_ends() {
    use std::time::{Duration, Instant};
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("never-ends");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo runs (apt-get install coreutils)");
    assert!(made.success());
    // Read and write: opening does not wait for a reader, and the pipe never reaches its end.
    let _writer = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&fifo)
        .unwrap();
    let fifo = fifo.to_str().unwrap();
    let good = format!("oci:{}", fixture("good").display());
    let pinned = "q.io/a/b:v1";
    let runs: [(Vec<&str>, &str); 5] = [
        (vec!["verify", &good, "--nodes", fifo], "reading --nodes"),
        (vec!["verify", "--from-file", fifo], "reading --from-file"),
        (
            vec!["mirror-check", "--pre", "--from-file", fifo],
            "reading --from-file",
        ),
        // Issue 33, item 16: the mirror configuration is read within --timeout too.
        (
            vec!["mirror-check", "--idms", fifo, pinned],
            "reading --idms",
        ),
        (
            vec!["mirror-check", "--registries-conf", fifo, pinned],
            "reading --registries-conf",
        ),
    ];
    for (args, doing) in runs {
        let started = Instant::now();
        let mut child = imgcheck()
            .args(&args)
            .args(["--timeout", "1s"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("imgcheck runs");
        while child.try_wait().unwrap().is_none() && started.elapsed() < Duration::from_secs(30) {
            std::thread::sleep(Duration::from_millis(50));
        }
        let took = started.elapsed();
        if child.try_wait().unwrap().is_none() {
            child.kill().unwrap();
        }
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            took >= Duration::from_secs(1) && took < Duration::from_secs(10),
            "{args:?}: took {took:?}: {stderr}"
        );
        assert_eq!(out.status.code(), Some(3), "{args:?}: {stderr}");
        assert!(
            stderr.contains("--timeout 1s passed while")
                && stderr.contains(doing)
                && stderr.contains(fifo),
            "{args:?}: {stderr}"
        );
    }
}

/// `--timeout` bounds merging the references into one target per image (issue 22, item 3):
/// 200,000 listed references are read, then gathered with the run's deadline already past
/// (the inputs took it all). The merge stops at once with the timeout error (exit 3) naming
/// what it was doing, instead of merging all of them first.
#[tokio::test]
async fn timeout_stops_merging_a_long_reference_list() {
    use imgcheck::error::{Blame, Fault};
    use imgcheck::run::{Connection, Inputs, RunError};
    use imgcheck::source::registry::ClientOptions;
    use std::time::{Duration, Instant};
    let dir = tempfile::tempdir().unwrap();
    let list = dir.path().join("refs.txt");
    let refs: String = (1..=200_000)
        .map(|i| format!("imgcheck-merge.invalid/r{i}:v1\n"))
        .collect();
    std::fs::write(&list, refs).unwrap();
    let inputs = Inputs {
        from_files: vec![list.display().to_string()],
        ..Inputs::default()
    };
    let plan = inputs.plan(&()).expect("the list is read");
    let limit = Duration::from_secs(1);
    let connection = Connection {
        options: ClientOptions {
            deadline: Some(limit),
            clock_start: Some(Instant::now() - 2 * limit),
            ..ClientOptions::default()
        },
        auth: imgcheck::auth::AuthStore::anonymous(),
    };
    let started = Instant::now();
    let err = match plan.gather(connection).await {
        Ok(g) => panic!("merged {} targets past the deadline", g.targets.len()),
        Err(e) => e,
    };
    assert!(
        started.elapsed() < Duration::from_millis(500),
        "{:?}",
        started.elapsed()
    );
    assert!(matches!(err, RunError::Timeout { limit: l, .. } if l == limit));
    assert_eq!(err.fault(), Fault::Unavailable, "exit 3");
    assert_eq!(
        err.to_string(),
        "--timeout 1s passed while merging 200000 references into one target per image \
         (0 merged): stopped"
    );
}

/// Issue 33, item 15: YAML aliases repeating one large string (a 0.4 MB file that parses to
/// 1 GB: serde_yaml_ng's guard counts alias expansions, not their size) are refused before
/// parsing, for every YAML input: exit 2 naming the file, at once.
#[test]
fn yaml_aliases_expanding_past_the_bound_are_refused_for_every_input() {
    use std::time::{Duration, Instant};
    let dir = tempfile::tempdir().unwrap();
    let big = "x".repeat(200_000);
    let aliases = vec!["*a"; 5_000].join(", ");
    let write = |name: &str, head: &str| {
        let path = dir.path().join(name);
        std::fs::write(
            &path,
            format!("{head}\nx-big: &a {big}\nx-many: [{aliases}]\n"),
        )
        .unwrap();
        path.display().to_string()
    };
    let idms = write(
        "idms.yaml",
        "apiVersion: config.openshift.io/v1\nkind: ImageDigestMirrorSet",
    );
    let nodes = write("nodes.yaml", "apiVersion: v1\nkind: List\nitems: []");
    let pods = write("pods.yaml", "apiVersion: v1\nkind: Pod");
    let imageset = write("imageset.yaml", "kind: ImageSetConfiguration");
    let policy = write("policy.yaml", "version: 1");
    let good = format!("oci:{}", fixture("good").display());
    let pinned = "q.io/a/b:v1";
    let runs: [(Vec<&str>, &str); 5] = [
        (vec!["mirror-check", "--idms", &idms, pinned], &idms),
        (vec!["verify", &good, "--nodes", &nodes], &nodes),
        (vec!["verify", "--from-manifests", &pods], &pods),
        (
            vec!["mirror-check", "--pre", "--from-imageset", &imageset],
            &imageset,
        ),
        (vec!["verify", &good, "--policy", &policy], &policy),
    ];
    for (args, file) in runs {
        let started = Instant::now();
        let out = imgcheck().args(&args).output().expect("imgcheck runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains(file) && stderr.contains("YAML aliases (*name) expand"),
            "{args:?}: {stderr}"
        );
        assert!(started.elapsed() < Duration::from_secs(20), "{args:?}");
    }
}

/// Issue 33, items 12–14: mirror configuration containerd or CRI-O cannot read — a
/// `hosts.toml` that is a FIFO or `/dev/zero`, a `registries.conf.d` drop-in that is one —
/// is refused at once (never opened, so never blocking), exit 2 naming the file; a host URL's
/// and a location's `user:password` and query are never printed, in the plan or in errors.
#[test]
fn mirror_configuration_nodes_cannot_read_is_refused_and_credentials_never_printed() {
    use std::os::unix::fs::symlink;
    use std::time::{Duration, Instant};
    let dir = tempfile::tempdir().unwrap();
    let fifo = |p: &std::path::Path| {
        let made = std::process::Command::new("mkfifo").arg(p).status();
        assert!(made.expect("mkfifo runs").success());
    };
    let hosts = dir.path().join("certs.d");
    std::fs::create_dir_all(hosts.join("quay.io")).unwrap();
    fifo(&hosts.join("quay.io/hosts.toml"));
    let zero = dir.path().join("zero.d");
    std::fs::create_dir_all(zero.join("_default")).unwrap();
    symlink("/dev/zero", zero.join("_default/hosts.toml")).unwrap();
    let conf = dir.path().join("registries.conf");
    std::fs::write(&conf, "[[registry]]\nlocation = \"quay.io/a\"\n").unwrap();
    std::fs::create_dir(dir.path().join("registries.conf.d")).unwrap();
    fifo(&dir.path().join("registries.conf.d/99-pipe.conf"));
    let (hosts, zero, conf) = (
        hosts.display().to_string(),
        zero.display().to_string(),
        conf.display().to_string(),
    );
    let pinned =
        "quay.io/a/b@sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
    let runs: [(Vec<&str>, String); 3] = [
        (
            vec!["--hosts-dir", &hosts, "--os", "windows"],
            format!("{hosts}/quay.io/hosts.toml: a FIFO, not a file"),
        ),
        (
            vec!["--hosts-dir", &zero, "--os", "windows"],
            format!("{zero}/_default/hosts.toml: a device, not a file"),
        ),
        (
            vec!["--registries-conf", &conf, "--os", "linux"],
            format!("{conf}.d/99-pipe.conf: a FIFO, not a regular file"),
        ),
    ];
    for (args, want) in runs {
        let started = Instant::now();
        let out = imgcheck()
            .args(["mirror-check", "--plan"])
            .args(&args)
            .arg(pinned)
            .output()
            .expect("imgcheck runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(&want), "{args:?}: {stderr}");
        assert!(started.elapsed() < Duration::from_secs(20), "{args:?}");
    }
    // Credentials and queries in hosts.toml URLs are dropped, as containerd drops them.
    let creds = dir.path().join("creds.d");
    std::fs::create_dir_all(creds.join("quay.io")).unwrap();
    std::fs::write(
        creds.join("quay.io/hosts.toml"),
        "server = \"https://u:s3cret@quay.io?token=s3cret\"\n\
         [host.\"https://u:s3cret@m.local:5000/v2/ocp#s3cret\"]\n  capabilities = [\"pull\"]\n  override_path = true\n",
    )
    .unwrap();
    let creds = creds.display().to_string();
    let out = imgcheck()
        .args([
            "mirror-check",
            "--plan",
            "--hosts-dir",
            &creds,
            "--os",
            "windows",
            pinned,
        ])
        .output()
        .expect("imgcheck runs");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stdout.contains("https://m.local:5000/v2/ocp/a/b/manifests/"),
        "{stdout}"
    );
    assert!(
        !stdout.contains("s3cret") && !stderr.contains("s3cret"),
        "{stdout}{stderr}"
    );
}
