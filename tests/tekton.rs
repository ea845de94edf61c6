//! The Konflux Tekton task: its script runs with the params substituted against the test
//! registry and writes a TEST_OUTPUT that satisfies ADR 0030.

use std::path::Path;
use std::process::Command;

use crate::common::{Registry, fixture};
use serde_json::Value;

fn task() -> serde_yaml_ng::Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tekton/imgcheck-verify.yaml");
    serde_yaml_ng::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Runs the task's step script as Tekton would: `$(params.*)` and `$(workspaces.policy.*)`
/// substituted in the step env (an unbound optional workspace: path empty, bound `false`),
/// `$(results.TEST_OUTPUT.path)` in the script, imgcheck on PATH, in a directory of its own.
fn run_task(params: &[(&str, &str)]) -> (Value, String) {
    run_task_with(params, None)
}

/// [`run_task`] with the `policy` workspace bound to `workspace`.
fn run_task_with(params: &[(&str, &str)], workspace: Option<&Path>) -> (Value, String) {
    let task = task();
    let step = &task["spec"]["steps"][0];
    let dir = tempfile::tempdir().unwrap();
    let result_path = dir.path().join("TEST_OUTPUT");
    let script = step["script"]
        .as_str()
        .unwrap()
        .replace("$(results.TEST_OUTPUT.path)", result_path.to_str().unwrap());
    for var in ["$(params.", "$(results.", "$(workspaces.", "$(context."] {
        assert!(
            !script.contains(var),
            "unsubstituted Tekton variable {var} in: {script}"
        );
    }
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_imgcheck")).parent().unwrap();
    let mut cmd = Command::new("bash");
    cmd.current_dir(dir.path());
    cmd.arg("-c").arg(&script).env(
        "PATH",
        format!(
            "{}:{}",
            bin_dir.display(),
            std::env::var("PATH").unwrap_or_default()
        ),
    );
    // Defaults from the task's params, then the given values.
    for p in task["spec"]["params"].as_sequence().unwrap() {
        if let Some(d) = p["default"].as_str() {
            cmd.env(p["name"].as_str().unwrap(), d);
        }
    }
    let (bound, path) = match workspace {
        Some(p) => ("true", p.to_str().unwrap()),
        None => ("false", ""),
    };
    for env in step["env"].as_sequence().unwrap() {
        let mut value = env["value"]
            .as_str()
            .unwrap()
            .replace("$(workspaces.policy.bound)", bound)
            .replace("$(workspaces.policy.path)", path);
        for (k, v) in params {
            value = value.replace(&format!("$(params.{k})"), v);
        }
        assert!(
            !value.contains("$(workspaces.") && !value.contains("$(results."),
            "unsubstituted Tekton variable in env: {value}"
        );
        if !value.contains("$(params.") {
            cmd.env(env["name"].as_str().unwrap(), value);
        }
    }
    let out = cmd.output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "the step succeeds; the verdict is in the result"
    );
    let written = std::fs::read_to_string(&result_path).expect("TEST_OUTPUT written");
    let doc: Value = serde_json::from_str(&written).expect("TEST_OUTPUT is JSON");
    check_adr_0030(&doc);
    (doc, String::from_utf8_lossy(&out.stderr).into_owned())
}

/// konflux-ci/architecture ADR 0030: required result, timestamp, successes, failures, warnings.
fn check_adr_0030(doc: &Value) {
    let obj = doc.as_object().expect("an object");
    for key in ["result", "timestamp", "successes", "failures", "warnings"] {
        assert!(obj.contains_key(key), "missing {key}: {doc}");
    }
    assert!(
        ["SUCCESS", "FAILURE", "WARNING", "SKIPPED", "ERROR"]
            .contains(&doc["result"].as_str().unwrap()),
        "{doc}"
    );
    humantime::parse_rfc3339(doc["timestamp"].as_str().unwrap()).expect("RFC 3339 timestamp");
    for key in ["successes", "failures", "warnings"] {
        assert!(
            doc[key].is_u64(),
            "{key} must be a non-negative integer: {doc}"
        );
    }
    for key in ["note", "namespace"] {
        assert!(doc.get(key).is_none_or(Value::is_string), "{key}: {doc}");
    }
}

#[test]
fn task_declares_the_konflux_interface() {
    let task = task();
    assert_eq!(task["kind"], "Task");
    let params: Vec<&str> = task["spec"]["params"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        params,
        ["IMAGE_URL", "IMAGE_DIGEST", "POLICY", "IMGCHECK_IMAGE"]
    );
    assert_eq!(task["spec"]["results"][0]["name"], "TEST_OUTPUT");
    let script = task["spec"]["steps"][0]["script"].as_str().unwrap();
    assert!(script.contains("--format konflux"));
    // Params reach the script through env only (no $(params.*) pasted into shell code).
    assert!(!script.contains("$(params."));
}

/// POLICY promises "a path in the workspace": the task declares that workspace (optional:
/// embedded policies need none) and every workspace it refers to.
#[test]
fn task_declares_the_policy_workspace_it_reads() {
    let task = task();
    let workspaces = task["spec"]["workspaces"]
        .as_sequence()
        .expect("spec.workspaces declared");
    let names: Vec<&str> = workspaces
        .iter()
        .map(|w| w["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["policy"]);
    assert_eq!(workspaces[0]["optional"], true);
    assert_eq!(workspaces[0]["readOnly"], true);
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tekton/imgcheck-verify.yaml"),
    )
    .unwrap();
    for used in text.split("$(workspaces.").skip(1) {
        let name = used.split('.').next().unwrap();
        assert!(names.contains(&name), "undeclared workspace {name}");
    }
}

/// The step's image is pinned: a param whose default is this release's version tag (or a
/// digest), never `:latest` or an untagged name.
#[test]
fn task_runs_a_pinned_imgcheck_image() {
    let task = task();
    let step = &task["spec"]["steps"][0];
    assert_eq!(step["image"], "$(params.IMGCHECK_IMAGE)");
    let param = task["spec"]["params"]
        .as_sequence()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "IMGCHECK_IMAGE")
        .expect("IMGCHECK_IMAGE param");
    let image = param["default"].as_str().unwrap();
    let pinned_by_digest = image.contains("@sha256:");
    let tag = image.rsplit_once(':').map(|(_, t)| t).unwrap_or("");
    assert!(
        pinned_by_digest || tag == env!("CARGO_PKG_VERSION"),
        "{image}: pin to the release ({}) or a digest",
        env!("CARGO_PKG_VERSION")
    );
    assert_eq!(
        task["metadata"]["labels"]["app.kubernetes.io/version"],
        env!("CARGO_PKG_VERSION")
    );
}

/// A policy file in the bound workspace, named relative to it, is the policy used.
#[test]
fn task_reads_a_policy_file_from_the_workspace() {
    let registry = Registry::start();
    let good = registry.push_layout(&fixture("good"), "csi/azure-file", "v4.18");
    let url = format!("{}/csi/azure-file:v4.18", registry.host());
    let workspace = tempfile::tempdir().unwrap();
    std::fs::create_dir(workspace.path().join("policies")).unwrap();
    // Needs linux/s390x: the fixture has no such entry.
    std::fs::write(
        workspace.path().join("policies/s390x.yaml"),
        "name: s390x\nlinux:\n  architectures: [s390x]\n",
    )
    .unwrap();
    let params = [
        ("IMAGE_URL", url.as_str()),
        ("IMAGE_DIGEST", good.as_str()),
        ("POLICY", "policies/s390x.yaml"),
    ];
    let (doc, stderr) = run_task_with(&params, Some(workspace.path()));
    assert_eq!(doc["result"], "FAILURE", "{doc}\n{stderr}");
    assert!(doc["note"].as_str().unwrap().contains("no-match"), "{doc}");
    // Without the workspace bound, the same POLICY is no file: the check cannot run.
    let (doc, _) = run_task(&params);
    assert_eq!(doc["result"], "ERROR", "{doc}");
}

#[test]
fn task_script_reports_success_failure_and_error() {
    let registry = Registry::start();
    let good = registry.push_layout(&fixture("good"), "csi/azure-file", "v4.18");
    let partial = registry.push_layout(&fixture("ltsc2022-only"), "csi/vsphere", "v4.18");
    let url = |repo: &str| format!("{}/{repo}:v4.18", registry.host());

    let (doc, _) = run_task(&[
        ("IMAGE_URL", &url("csi/azure-file")),
        ("IMAGE_DIGEST", &good),
    ]);
    assert_eq!(doc["result"], "SUCCESS", "{doc}");
    assert_eq!(doc["successes"], 1);

    let (doc, _) = run_task(&[
        ("IMAGE_URL", &url("csi/vsphere")),
        ("IMAGE_DIGEST", &partial),
    ]);
    assert_eq!(doc["result"], "FAILURE", "{doc}");
    assert_eq!(doc["failures"], 1);
    assert!(doc["note"].as_str().unwrap().contains("no-match"), "{doc}");

    // A digest the repository does not hold (issue 15): `not-found`, a failure retrying
    // cannot fix, so FAILURE rather than ERROR.
    let (doc, _) = run_task(&[("IMAGE_URL", &url("csi/vsphere")), ("IMAGE_DIGEST", &good)]);
    assert_eq!(doc["result"], "FAILURE", "{doc}");
    assert!(doc["note"].as_str().unwrap().contains("not-found"), "{doc}");

    // Bad params: imgcheck refuses them (exit 2); the task still writes an ERROR result.
    let (doc, stderr) = run_task(&[
        ("IMAGE_URL", &url("csi/azure-file")),
        ("IMAGE_DIGEST", &good),
        ("POLICY", "no-such-policy"),
    ]);
    assert_eq!(doc["result"], "ERROR", "{doc}");
    assert!(stderr.contains("no-such-policy"), "{stderr}");
}
