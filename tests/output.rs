//! What imgcheck prints from hostile inputs (issue 22, items 6 and 8): control characters
//! from node names, labels, references and registry messages are escaped in text output (a
//! field never moves the cursor, clears the screen or starts a line), and secrets a failing
//! credential helper or a registry's error body shows are not printed.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use crate::common::proxy::{Fault, FaultProxy, Match, Rule};
use crate::common::{Registry, fixture, fixtures_dir, imgcheck};
use serde_json::Value;

/// What a run printed, and how it ended.
struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

fn run(mut cmd: Command) -> Run {
    let out: Output = cmd.stdin(Stdio::null()).output().expect("imgcheck runs");
    let run = Run {
        code: out.status.code().expect("exit code"),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    run
}

fn imgcheck_with(args: &[&str]) -> Run {
    let mut cmd = imgcheck();
    cmd.args(args);
    run(cmd)
}

/// Characters that act on a terminal or an editor instead of being shown: C0 and C1 controls,
/// DEL, bidirectional overrides and isolates, and the Unicode line and paragraph separators.
fn acts_on_terminal(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{61c}' | '\u{200e}' | '\u{200f}' | '\u{2028}' | '\u{2029}'
        )
        || ('\u{202a}'..='\u{202e}').contains(&c)
        || ('\u{2066}'..='\u{2069}').contains(&c)
}

/// Text output holds no such character except the newlines that end its lines (and, with
/// `tabs`, the tabs that separate its columns).
fn assert_inert(what: &str, text: &str, tabs: bool) {
    let bad: Vec<char> = text
        .chars()
        .filter(|&c| c != '\n' && !(tabs && c == '\t') && acts_on_terminal(c))
        .collect();
    assert!(bad.is_empty(), "{what}: raw {bad:?} in:\n{text}");
}

/// The fixture node list with one Windows node's name set to `name`.
fn nodes_named(dir: &Path, name: &str) -> String {
    let path = fixtures_dir().join("nodes/ocp-wmco.json");
    let mut doc: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let node = doc["items"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|n| n["metadata"]["labels"]["kubernetes.io/os"] == "windows")
        .expect("a Windows node");
    node["metadata"]["name"] = Value::from(name);
    let out = dir.join("name-injection.json");
    std::fs::write(&out, doc.to_string()).unwrap();
    out.display().to_string()
}

/// A node name that clears the screen, returns the cursor and forges a PASS line.
const FORGED: &str =
    "evil\u{1b}[2J\u{1b}[H\rPASS  quay.io/forged  sha256:0000\nnext\tcol\u{9b}31m\u{202e}";

/// Issue 22 item 6: a crafted node name is escaped in `verify`'s text report and in
/// `resolve --nodes`' lines: no line begins with the forged `PASS`, and a field never adds a
/// line or a column.
#[test]
fn a_crafted_node_name_cannot_forge_a_line() {
    let dir = tempfile::tempdir().unwrap();
    let nodes = nodes_named(dir.path(), FORGED);
    let layout = format!("oci:{}", fixture("good").display());
    let verify = imgcheck_with(&["verify", "--nodes", &nodes, &layout]);
    assert_eq!(verify.code, 0, "{}{}", verify.stdout, verify.stderr);
    assert_inert("verify", &verify.stdout, false);
    assert!(
        verify
            .stdout
            .contains(r"evil\u{1b}[2J\u{1b}[H\rPASS  quay.io/forged"),
        "{}",
        verify.stdout
    );
    assert!(
        verify.stdout.contains(r"\nnext\tcol\u{9b}31m\u{202e}"),
        "{}",
        verify.stdout
    );
    assert_eq!(
        verify
            .stdout
            .lines()
            .filter(|l| l.starts_with("PASS"))
            .count(),
        1,
        "{}",
        verify.stdout
    );
    let resolve = imgcheck_with(&["resolve", "--nodes", &nodes, &layout]);
    assert_eq!(resolve.code, 0, "{}{}", resolve.stdout, resolve.stderr);
    assert_inert("resolve", &resolve.stdout, true);
    for line in resolve.stdout.lines() {
        assert_eq!(line.matches('\t').count(), 3, "{line:?}");
    }
    // JSON keeps the name as it is (JSON escapes it itself).
    let json = imgcheck_with(&["verify", "--nodes", &nodes, &layout, "--format", "json"]);
    assert!(json.stdout.contains(r"\u001b[2J"), "{}", json.stdout);
}

/// Issue 22 item 6: labels and references with control characters reach standard error (as
/// errors and notes) and the report escaped.
#[test]
fn labels_and_references_are_escaped_in_errors_and_reports() {
    let dir = tempfile::tempdir().unwrap();
    // A label value that is not an architecture: an error naming it.
    let path = fixtures_dir().join("nodes/ocp-wmco.json");
    let mut doc: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    doc["items"][0]["metadata"]["labels"]["kubernetes.io/arch"] =
        Value::from("lin\u{1b}[2J\rPASS\nux");
    let nodes = dir.path().join("label.json");
    std::fs::write(&nodes, doc.to_string()).unwrap();
    let layout = format!("oci:{}", fixture("good").display());
    let label = imgcheck_with(&["verify", "--nodes", &nodes.display().to_string(), &layout]);
    assert_eq!(label.code, 2, "{}{}", label.stdout, label.stderr);
    assert_inert("label error", &label.stderr, false);
    assert!(
        label.stderr.contains(r"lin\u{1b}[2J\rPASS\nux"),
        "{}",
        label.stderr
    );
    // References: as arguments, and in a --from-file list.
    let bad = "quay.io/x\u{1b}[2J\rPASS:v1";
    let list = dir.path().join("refs.txt");
    std::fs::write(
        &list,
        format!("{bad}\noci:{}/no\u{7}pe\n", dir.path().display()),
    )
    .unwrap();
    for args in [
        vec!["verify", bad],
        vec!["verify", "--from-file", list.to_str().unwrap()],
        vec!["inspect", bad],
    ] {
        let r = imgcheck_with(&args);
        assert_ne!(r.code, 0, "{args:?}");
        assert_inert(&format!("{args:?} stdout"), &r.stdout, false);
        assert_inert(&format!("{args:?} stderr"), &r.stderr, false);
        let said = format!("{}{}", r.stdout, r.stderr);
        assert!(said.contains(r"\u{1b}[2J\rPASS"), "{args:?}: {said}");
    }
}

/// A registry in front of which every manifest request is answered `status` with `body`.
fn answering(status: u16, body: &str) -> (Registry, FaultProxy, String) {
    let registry = Registry::start();
    registry.push_layout(&fixture("good"), "csi/driver", "v1");
    let proxy = FaultProxy::start(
        &registry.base_url(),
        vec![Rule::always(
            Match::Manifests,
            Fault::Answer {
                status,
                body: body.to_string(),
            },
        )],
    );
    let reference = format!("{}/csi/driver:v1", proxy.host());
    (registry, proxy, reference)
}

/// Issue 22 item 6: a registry's error message with control characters is escaped in the text
/// report (and kept, JSON-escaped, in the JSON one).
#[test]
fn a_registry_message_with_control_characters_is_escaped() {
    let body =
        r#"{"errors":[{"code":"DENIED","message":"denied\u001b[2J\r\nPASS  quay.io/forged"}]}"#;
    let (_registry, _proxy, reference) = answering(403, body);
    let text = imgcheck_with(&["verify", &reference, "--retries", "1"]);
    assert_eq!(text.code, 3, "{}{}", text.stdout, text.stderr);
    assert_inert("text report", &text.stdout, false);
    assert!(
        text.stdout
            .contains(r"denied\u{1b}[2J\r\nPASS  quay.io/forged"),
        "{}",
        text.stdout
    );
    assert!(!text.stdout.lines().any(|l| l.starts_with("PASS")));
    let json = imgcheck_with(&["verify", &reference, "--retries", "1", "--format", "json"]);
    let doc: Value = serde_json::from_str(&json.stdout).expect("JSON");
    assert!(doc.to_string().contains(r"\u001b[2J"), "{doc}");
}

/// The parts of a presigned URL and of other signed requests that must never be printed.
const SIGNED: [&str; 6] = [
    "f00dfeedcafe1234deadbeef",
    "AKIAIOSFODNN7EXAMPLE",
    "IQoJb3JpZ2luX2VjEJr",
    "c2lnbmF0dXJlLXZhbHVl",
    "sv-sig-Zx81",
    "tok-7Hq2mP",
];

/// Issue 22 item 8: a registry's error body that echoes a presigned URL (or other signed
/// parameters) has its query and secret parameters scrubbed, in text and in JSON, in the
/// distribution error envelope and in a plain body.
#[test]
fn signed_urls_in_registry_error_bodies_are_scrubbed() {
    let url = "https://bucket.s3.amazonaws.com/docker/blobs/sha256/ab/data?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20260101%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Signature=f00dfeedcafe1234deadbeef&X-Amz-Security-Token=IQoJb3JpZ2luX2VjEJr";
    let others = "Signature=c2lnbmF0dXJlLXZhbHVl; sig=sv-sig-Zx81, token=tok-7Hq2mP";
    let envelope = serde_json::json!({"errors": [{"code": "DENIED", "message": format!("storage said no: {url} ({others})")}]});
    for body in [
        envelope.to_string(),
        format!("<Error>{url} {others}</Error>"),
    ] {
        let (_registry, _proxy, reference) = answering(403, &body);
        for format in ["text", "json"] {
            let r = imgcheck_with(&["verify", &reference, "--retries", "1", "--format", format]);
            assert_eq!(r.code, 3, "{}{}", r.stdout, r.stderr);
            let said = format!("{}{}", r.stdout, r.stderr);
            for secret in SIGNED {
                assert!(
                    !said.contains(secret),
                    "{format}: {secret} printed:\n{said}"
                );
            }
            assert!(
                said.contains("https://bucket.s3.amazonaws.com/docker/blobs/sha256/ab/data?"),
                "{format}: the URL itself is kept:\n{said}"
            );
            assert!(said.contains("<redacted>"), "{format}:\n{said}");
        }
    }
}

/// Issue 22 item 8: a credential helper that fails with a secret on its standard error is
/// reported by its exit status and a redacted first line: the secret and the lines after the
/// first are never printed.
#[test]
fn a_failing_credential_helper_is_reported_without_its_secrets() {
    let registry = Registry::start();
    registry.push_layout(&fixture("good"), "csi/driver", "v1");
    let home = tempfile::tempdir().unwrap();
    let bin = home.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let helper = bin.join("docker-credential-leaky");
    std::fs::write(
        &helper,
        "#!/bin/sh\n\
         cat >/dev/null\n\
         echo 'refresh failed for alice: token=hvs-Tok3n-9f8e7d Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.c2VjcmV0 key AKIAxQ7Zr4Secret99Word' >&2\n\
         echo 'second line: password hunter2-Second-Line' >&2\n\
         echo '{\"Secret\":\"stdout-Secret-51b0\"}'\n\
         exit 7\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&helper, std::fs::Permissions::from_mode(0o755)).unwrap();
    let config = home.path().join("docker");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("config.json"),
        serde_json::json!({"credHelpers": {registry.host(): "leaky"}}).to_string(),
    )
    .unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let reference = format!("{}/csi/driver:v1", registry.host());
    for format in ["text", "json"] {
        let mut cmd = imgcheck();
        cmd.env("HOME", home.path())
            .env_remove("REGISTRY_AUTH_FILE")
            .env_remove("XDG_RUNTIME_DIR")
            .env("DOCKER_CONFIG", &config)
            .env("PATH", &path)
            .args(["verify", &reference, "--format", format]);
        let r = run(cmd);
        assert_eq!(r.code, 3, "{format}: {}{}", r.stdout, r.stderr);
        let said = format!("{}{}", r.stdout, r.stderr);
        for secret in [
            "hvs-Tok3n-9f8e7d",
            "eyJhbGciOiJIUzI1NiJ9",
            "AKIAxQ7Zr4Secret99Word",
            "hunter2",
            "second line",
            "stdout-Secret",
        ] {
            assert!(
                !said.contains(secret),
                "{format}: {secret} printed:\n{said}"
            );
        }
        assert!(
            said.contains("docker-credential-leaky")
                && said.contains("exit status: 7")
                && said.contains("refresh failed for alice"),
            "{format}:\n{said}"
        );
    }
}
