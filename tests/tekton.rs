//! The Tekton tasks and the example Pipeline (tekton/, issue 36): each Task's steps run as
//! Tekton runs them — `$(params.*)` (arrays through `[*]` in `args`), `$(workspaces.*)` and
//! `$(results.*.path)` substituted, the script given the step's `args`, imgcheck on PATH —
//! against a real registry; the YAML is checked against the Tekton v1 fields, the Pipeline's
//! wiring against the Tasks it runs.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{Registry, fixture, skopeo_copy_all};
use serde_json::Value;
use serde_yaml_ng::Value as Yaml;

/// The Tasks under tekton/, by file name.
const TASKS: [&str; 4] = [
    "imgcheck-verify",
    "imgcheck-mirror-check",
    "imgcheck-assemble",
    "imgcheck-build",
];

fn load(name: &str) -> Yaml {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tekton/{name}.yaml"));
    serde_yaml_ng::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// What a TaskRun left: its results (by name), the steps' standard output and error, and
/// the exit code of the last step run.
struct Run {
    results: BTreeMap<String, String>,
    log: String,
    code: Option<i32>,
}

impl Run {
    /// The TEST_OUTPUT result, checked against ADR 0030.
    fn test_output(&self) -> Value {
        let text = self
            .results
            .get("TEST_OUTPUT")
            .expect("TEST_OUTPUT written");
        let doc: Value = serde_json::from_str(text).expect("TEST_OUTPUT is JSON");
        check_adr_0030(&doc);
        assert!(text.len() <= 4096, "a result over Tekton's limit: {text}");
        doc
    }

    /// The IMAGES_PROCESSED result: `{"image": {"pullspec", "digests"}}`.
    fn digests_processed(&self) -> Vec<String> {
        let text = &self.results["IMAGES_PROCESSED"];
        let doc: Value = serde_json::from_str(text).expect("IMAGES_PROCESSED is JSON");
        assert!(doc["image"]["pullspec"].is_string(), "{doc}");
        let digests = doc["image"]["digests"].as_array().expect("digests");
        digests
            .iter()
            .map(|d| d.as_str().unwrap().to_string())
            .collect()
    }
}

/// A TaskRun of `task`: string params, array params, bound workspaces.
#[derive(Default)]
struct TaskRun<'a> {
    params: Vec<(&'a str, &'a str)>,
    arrays: Vec<(&'a str, Vec<String>)>,
    workspaces: Vec<(&'a str, &'a Path)>,
}

impl TaskRun<'_> {
    /// Runs the steps of `task` in order, as Tekton does, until one fails.
    fn run(&self, task: &str) -> Run {
        let task = load(task);
        let spec = &task["spec"];
        let dir = tempfile::tempdir().unwrap();
        let vars = self.variables(spec, dir.path());
        let mut run = Run {
            results: BTreeMap::new(),
            log: String::new(),
            code: None,
        };
        let template_env = spec["stepTemplate"]["env"].as_sequence().cloned();
        for step in spec["steps"].as_sequence().unwrap() {
            let script = substitute(step["script"].as_str().unwrap(), &vars);
            let mut cmd = Command::new("bash");
            cmd.current_dir(dir.path())
                .arg("-c")
                .arg(&script)
                .arg("step");
            for arg in step["args"].as_sequence().into_iter().flatten() {
                cmd.args(self.expand(arg.as_str().unwrap(), &vars));
            }
            let env = template_env.iter().flatten();
            for e in env.chain(step["env"].as_sequence().into_iter().flatten()) {
                let value = substitute(e["value"].as_str().unwrap(), &vars);
                cmd.env(e["name"].as_str().unwrap(), value);
            }
            let bin = Path::new(env!("CARGO_BIN_EXE_imgcheck")).parent().unwrap();
            let path = std::env::var("PATH").unwrap_or_default();
            cmd.env("PATH", format!("{}:{path}", bin.display()));
            let out = cmd.output().unwrap();
            run.log.push_str(&String::from_utf8_lossy(&out.stdout));
            run.log.push_str(&String::from_utf8_lossy(&out.stderr));
            run.code = out.status.code();
            if run.code != Some(0) {
                break;
            }
        }
        for r in spec["results"].as_sequence().unwrap() {
            let name = r["name"].as_str().unwrap();
            if let Ok(text) = std::fs::read_to_string(dir.path().join("results").join(name)) {
                run.results.insert(name.to_string(), text);
            }
        }
        run
    }

    /// `$(params.X)`, `$(workspaces.W.path|bound)`, `$(results.R.path)` and what they stand
    /// for; the results under `dir/results`. A param neither given nor defaulted is missing.
    fn variables(&self, spec: &Yaml, dir: &Path) -> Vec<(String, String)> {
        let mut vars = Vec::new();
        for p in spec["params"].as_sequence().unwrap() {
            let name = p["name"].as_str().unwrap();
            let given = self
                .params
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| *v);
            if let Some(v) = given.or(p["default"].as_str()) {
                vars.push((format!("$(params.{name})"), v.to_string()));
            }
        }
        for w in spec["workspaces"].as_sequence().into_iter().flatten() {
            let name = w["name"].as_str().unwrap();
            let bound = self.workspaces.iter().find(|(k, _)| *k == name);
            let path = bound.map_or(String::new(), |(_, p)| p.display().to_string());
            vars.push((format!("$(workspaces.{name}.path)"), path));
            vars.push((
                format!("$(workspaces.{name}.bound)"),
                bound.is_some().to_string(),
            ));
        }
        std::fs::create_dir(dir.join("results")).unwrap();
        for r in spec["results"].as_sequence().unwrap() {
            let name = r["name"].as_str().unwrap();
            let path = dir.join("results").join(name);
            vars.push((
                format!("$(results.{name}.path)"),
                path.display().to_string(),
            ));
        }
        vars
    }

    /// A step's arg: an array param's `[*]` gives its items, anything else one string.
    fn expand(&self, arg: &str, vars: &[(String, String)]) -> Vec<String> {
        for (name, items) in &self.arrays {
            if arg == format!("$(params.{name}[*])") {
                return items.clone();
            }
        }
        vec![substitute(arg, vars)]
    }
}

/// `text` with every variable of `vars` substituted; none may be left.
fn substitute(text: &str, vars: &[(String, String)]) -> String {
    let mut out = text.to_string();
    for (k, v) in vars {
        out = out.replace(k, v);
    }
    for var in [
        "$(params.",
        "$(results.",
        "$(workspaces.",
        "$(context.",
        "$(tasks.",
    ] {
        assert!(
            !out.contains(var),
            "unsubstituted Tekton variable {var} in: {out}"
        );
    }
    out
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

/// The WS2022 child of the fixture lists.
const W20348: &str = "sha256:8888abdb127247b9029b295a056efda3ab86a1b275850c397f6d51b1be2b1b58";

/// `good` pushed to `registry` as `repo:v1`, and the same list without its WS2022 entry as
/// `repo:no-ws2022` (as tests/gate.rs makes it); their digests.
fn push_good_and_no_ws2022(registry: &Registry, repo: &str) -> (String, String) {
    let good = registry.push_layout(&fixture("good"), repo, "v1");
    let (status, body) = registry.get_manifest(repo, "v1");
    assert_eq!(status, 200);
    let mut index: Value = serde_json::from_slice(&body).unwrap();
    let entries = index["manifests"].as_array_mut().unwrap();
    entries.retain(|d| d["digest"] != W20348);
    let resp = registry
        .client()
        .put(registry.url(&format!("/v2/{repo}/manifests/no-ws2022")))
        .header("Content-Type", "application/vnd.oci.image.index.v1+json")
        .body(serde_json::to_vec(&index).unwrap())
        .send()
        .unwrap();
    assert_eq!(resp.status().as_u16(), 201);
    let partial = registry.manifest_digest(repo, "no-ws2022").unwrap();
    (good, partial)
}

/// verify: SUCCESS for a good list, with the index and every entry in IMAGES_PROCESSED;
/// FAILURE for one without a WS2022 entry, the log's host matrix naming the WS2022 host and
/// the hint, TEST_OUTPUT's note naming the rule and host; a digest the repository lacks is
/// FAILURE (`not-found`); bad params still give a result, ERROR.
#[test]
fn verify_task_reports_success_failure_and_error() {
    let registry = Registry::start();
    let (good, partial) = push_good_and_no_ws2022(&registry, "csi/azure-file");
    let url = format!("{}/csi/azure-file:v1", registry.host());
    let other = format!("{}/csi/other:v1", registry.host());
    registry.push_layout(&fixture("ltsc2022-only"), "csi/other", "v1");
    let verify_at = |url: &str, digest: &str, policy: &str| {
        let params = vec![
            ("IMAGE_URL", url),
            ("IMAGE_DIGEST", digest),
            ("POLICY", policy),
            ("SANDBOX_IMAGE", "none"),
        ];
        let run = TaskRun {
            params,
            ..TaskRun::default()
        }
        .run("imgcheck-verify");
        assert_eq!(run.code, Some(0), "the step succeeds: {}", run.log);
        run
    };
    let verify = |digest: &str, policy: &str| verify_at(&url, digest, policy);
    let run = verify(&good, "openshift");
    assert_eq!(run.test_output()["result"], "SUCCESS", "{}", run.log);
    let processed = run.digests_processed();
    assert_eq!(processed.len(), 5, "{processed:?}");
    assert_eq!(processed[0], good);

    let run = verify(&partial, "openshift");
    let doc = run.test_output();
    assert_eq!(doc["result"], "FAILURE", "{doc}");
    assert!(
        doc["note"]
            .as_str()
            .unwrap()
            .contains("no-match on windows/amd64:10.0.20348"),
        "{doc}"
    );
    let failing = run
        .log
        .lines()
        .find(|l| l.trim_start().starts_with("windows/amd64:10.0.20348"))
        .unwrap_or_default();
    assert!(failing.contains("no-match"), "{}", run.log);
    assert!(
        run.log.contains("hint: add an entry built for this host"),
        "{}",
        run.log
    );

    // A digest the repository does not hold (issue 15): `not-found`, which retrying cannot
    // fix, so FAILURE rather than ERROR.
    let doc = verify_at(&other, &good, "openshift").test_output();
    assert_eq!(doc["result"], "FAILURE", "{doc}");
    assert!(doc["note"].as_str().unwrap().contains("not-found"), "{doc}");

    let run = verify(&good, "no-such-policy");
    assert_eq!(run.test_output()["result"], "ERROR", "{}", run.log);
    assert!(run.log.contains("no-such-policy"), "{}", run.log);
}

/// A policy file in the bound workspace, named relative to it, is the policy used; the full
/// JSON report goes to the `reports` workspace.
#[test]
fn verify_task_reads_the_workspace_and_keeps_the_report() {
    let registry = Registry::start();
    let good = registry.push_layout(&fixture("good"), "csi/azure-file", "v4.18");
    let url = format!("{}/csi/azure-file:v4.18", registry.host());
    let workspace = tempfile::tempdir().unwrap();
    let reports = tempfile::tempdir().unwrap();
    std::fs::create_dir(workspace.path().join("policies")).unwrap();
    // Needs linux/s390x: the fixture has no such entry.
    std::fs::write(
        workspace.path().join("policies/s390x.yaml"),
        "name: s390x\nlinux:\n  architectures: [s390x]\n",
    )
    .unwrap();
    let params = vec![
        ("IMAGE_URL", url.as_str()),
        ("IMAGE_DIGEST", good.as_str()),
        ("POLICY", "policies/s390x.yaml"),
    ];
    let run = TaskRun {
        params: params.clone(),
        workspaces: vec![("policy", workspace.path()), ("reports", reports.path())],
        ..TaskRun::default()
    }
    .run("imgcheck-verify");
    let doc = run.test_output();
    assert_eq!(doc["result"], "FAILURE", "{doc}\n{}", run.log);
    assert!(
        doc["note"]
            .as_str()
            .unwrap()
            .contains("no-match on linux/s390x"),
        "{doc}"
    );
    let report = std::fs::read(reports.path().join("imgcheck-verify.json")).unwrap();
    let report: Value = serde_json::from_slice(&report).unwrap();
    assert_eq!(report["images"][0]["verdict"], "fail");
    // Without the workspace bound, the same POLICY is no file: the check cannot run.
    let run = TaskRun {
        params,
        ..TaskRun::default()
    }
    .run("imgcheck-verify");
    assert_eq!(run.test_output()["result"], "ERROR");
}

/// mirror-check before mirroring (`PRE`): SUCCESS for the good list, FAILURE naming the
/// WS2022 host for the one without it; after mirroring (`MIRRORS`, an IDMS in the config
/// workspace, a port-less source as WMCO needs): SUCCESS through the mirror.
#[test]
fn mirror_check_task_gates_before_and_after_mirroring() {
    let source = Registry::start_portless();
    let (good, partial) = push_good_and_no_ws2022(&source, "csi/driver");
    let url = format!("{}/csi/driver:v1", source.host());
    let gate = |params: Vec<(&str, &str)>, config: Option<&Path>| {
        let mut params = params;
        params.extend([("IMAGE_URL", url.as_str()), ("SANDBOX_IMAGE", "none")]);
        let workspaces = config.map(|c| vec![("config", c)]).unwrap_or_default();
        let run = TaskRun {
            params,
            workspaces,
            ..TaskRun::default()
        }
        .run("imgcheck-mirror-check");
        assert_eq!(run.code, Some(0), "{}", run.log);
        run
    };
    let run = gate(vec![("PRE", "true"), ("IMAGE_DIGEST", &good)], None);
    assert_eq!(run.test_output()["result"], "SUCCESS", "{}", run.log);
    assert!(run.digests_processed().contains(&good));
    let run = gate(vec![("PRE", "true"), ("IMAGE_DIGEST", &partial)], None);
    let doc = run.test_output();
    assert_eq!(doc["result"], "FAILURE", "{doc}");
    assert!(
        doc["note"]
            .as_str()
            .unwrap()
            .contains("windows/amd64:10.0.20348"),
        "{doc}"
    );
    assert!(run.log.contains("windows/amd64:10.0.20348"), "{}", run.log);

    let mirror = Registry::start();
    skopeo_copy_all(
        &source.docker_ref("csi/driver", "v1"),
        &mirror.docker_ref("mirror/csi/driver", "v1"),
    );
    let config = tempfile::tempdir().unwrap();
    std::fs::write(
        config.path().join("idms.yaml"),
        format!(
            "apiVersion: config.openshift.io/v1\nkind: ImageDigestMirrorSet\nmetadata: {{name: a}}\n\
             spec:\n  imageDigestMirrors:\n  - source: {}\n    mirrors: [{}/mirror]\n",
            source.host(),
            mirror.host()
        ),
    )
    .unwrap();
    let run = gate(
        vec![("MIRRORS", "idms.yaml"), ("IMAGE_DIGEST", &good)],
        Some(config.path()),
    );
    assert_eq!(run.test_output()["result"], "SUCCESS", "{}", run.log);
}

/// assemble: the children (an array param) become a list, pushed and verified; its results
/// name it, and IMAGES each entry.
#[test]
fn assemble_task_gives_the_list_and_its_entries() {
    let registry = Registry::start();
    let good = registry.push_layout(&fixture("good"), "src/driver", "v1");
    let (status, body) = registry.get_manifest("src/driver", &good);
    assert_eq!(status, 200);
    let index: Value = serde_json::from_slice(&body).unwrap();
    let children: Vec<String> = index["manifests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            format!(
                "{}/src/driver@{}",
                registry.host(),
                d["digest"].as_str().unwrap()
            )
        })
        .collect();
    let target = format!("{}/csi/driver:v1", registry.host());
    let run = TaskRun {
        params: vec![("IMAGE", &target)],
        arrays: vec![("CHILDREN", children.clone())],
        ..TaskRun::default()
    }
    .run("imgcheck-assemble");
    assert_eq!(run.code, Some(0), "{}", run.log);
    assert!(run.log.contains("PASS"), "{}", run.log);
    assert_eq!(run.results["IMAGE_URL"], target);
    let by_digest = format!(
        "{}/csi/driver@{}",
        registry.host(),
        run.results["IMAGE_DIGEST"]
    );
    assert_eq!(run.results["IMAGE_REF"], by_digest);
    let digest = registry.manifest_digest("csi/driver", "v1").unwrap();
    assert_eq!(run.results["IMAGE_DIGEST"], digest);
    let images: Vec<&str> = run.results["IMAGES"].split(',').collect();
    assert_eq!(images.len(), children.len(), "{images:?}");
    assert!(
        images
            .iter()
            .all(|i| i.starts_with(&format!("{}/csi/driver@sha256:", registry.host())))
    );
}

/// build, dry run: the plan step picks the platform's build and push out of the plan, the
/// log shows them, IMAGE_URL names the per-platform tag; a platform the plan lacks fails.
#[test]
fn build_task_dry_run_gives_the_platform_image() {
    let source = tempfile::tempdir().unwrap();
    let plans = Path::new(env!("CARGO_MANIFEST_DIR")).join("buildah");
    copy_dir(&plans, &source.path().join("buildah"));
    std::fs::create_dir(source.path().join("azurefile")).unwrap();
    let run = |platform: &str| {
        TaskRun {
            params: vec![
                ("IMAGE", "azurefile-csi"),
                ("PLATFORM", platform),
                ("PUSH", "registry.example/csi"),
                ("TAG", "v1"),
                ("CONTEXT_VARS", "AZUREFILE_CSI_SRC=azurefile"),
                ("DRY_RUN", "true"),
            ],
            workspaces: vec![("source", source.path())],
            ..TaskRun::default()
        }
        .run("imgcheck-build")
    };
    let r = run("windows-amd64-20348");
    assert_eq!(r.code, Some(0), "{}", r.log);
    assert_eq!(
        r.results["IMAGE_URL"],
        "registry.example/csi/azurefile-csi:v1-windows-amd64-20348"
    );
    assert_eq!(r.results["IMAGE_DIGEST"], "");
    assert!(
        r.log.contains(" build --platform=windows/amd64 "),
        "{}",
        r.log
    );
    assert!(r.log.contains("OSVERSION=ltsc2022"), "{}", r.log);
    assert!(!r.log.contains("ltsc2019"), "one platform only: {}", r.log);
    let r = run("linux-s390x");
    assert_eq!(r.code, Some(1), "{}", r.log);
    assert!(
        r.log.contains("no build of azurefile-csi for linux-s390x"),
        "{}",
        r.log
    );
}

fn copy_dir(from: &Path, to: &PathBuf) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// Each object of a Tekton v1 Task or Pipeline, by its path of keys (`*` for a list's
/// items), and the fields it may have: those of tekton.dev/v1 that these files use or a
/// Konflux task commonly does. A field outside them — a v1beta1 name (`resources`), a typo —
/// fails.
const V1_FIELDS: &[(&str, &[&str])] = &[
    ("", &["apiVersion", "kind", "metadata", "spec"]),
    ("metadata", &["name", "labels", "annotations"]),
    (
        "spec",
        &[
            "description",
            "displayName",
            "params",
            "workspaces",
            "results",
            "steps",
            "stepTemplate",
            "volumes",
            "sidecars",
            "tasks",
            "finally",
        ],
    ),
    (
        "spec.params.*",
        &[
            "name",
            "type",
            "description",
            "default",
            "enum",
            "properties",
        ],
    ),
    (
        "spec.workspaces.*",
        &["name", "description", "mountPath", "readOnly", "optional"],
    ),
    (
        "spec.results.*",
        &["name", "description", "type", "properties", "value"],
    ),
    (
        "spec.volumes.*",
        &["name", "configMap", "secret", "emptyDir"],
    ),
    (
        "spec.steps.*",
        &[
            "name",
            "image",
            "script",
            "args",
            "command",
            "env",
            "envFrom",
            "computeResources",
            "volumeMounts",
            "workingDir",
            "securityContext",
            "imagePullPolicy",
            "onError",
            "timeout",
        ],
    ),
    (
        "spec.stepTemplate",
        &[
            "env",
            "envFrom",
            "volumeMounts",
            "computeResources",
            "securityContext",
            "workingDir",
            "image",
        ],
    ),
    (
        "spec.tasks.*",
        &[
            "name",
            "displayName",
            "description",
            "taskRef",
            "taskSpec",
            "params",
            "matrix",
            "workspaces",
            "runAfter",
            "when",
            "retries",
            "timeout",
            "onError",
        ],
    ),
    (
        "spec.tasks.*.taskRef",
        &["name", "kind", "apiVersion", "resolver", "params"],
    ),
    ("spec.tasks.*.matrix", &["params", "include"]),
    ("spec.tasks.*.matrix.include.*", &["name", "params"]),
    ("spec.tasks.*.params.*", &["name", "value"]),
    ("spec.tasks.*.matrix.params.*", &["name", "value"]),
    ("spec.tasks.*.matrix.include.*.params.*", &["name", "value"]),
    (
        "spec.tasks.*.workspaces.*",
        &["name", "workspace", "subPath"],
    ),
];

/// Checks the mapping at `path` against [`V1_FIELDS`], and below it every mapping that has
/// an entry there.
fn check_v1(value: &Yaml, path: &str, file: &str) {
    let Some(map) = value.as_mapping() else {
        if let Some(items) = value.as_sequence() {
            items
                .iter()
                .for_each(|i| check_v1(i, &format!("{path}.*"), file));
        }
        return;
    };
    let Some((_, allowed)) = V1_FIELDS
        .iter()
        .find(|(p, _)| *p == path.trim_start_matches('.'))
    else {
        return;
    };
    for (k, v) in map {
        let k = k.as_str().unwrap();
        assert!(
            allowed.contains(&k),
            "{file}: {path}.{k} is no Tekton v1 field"
        );
        check_v1(v, &format!("{path}.{k}"), file);
    }
}

/// Every Task and the Pipeline are Tekton v1 (`apiVersion`, fields); every step's image is a
/// param whose default is pinned by digest; every workspace and result a script names is
/// declared.
#[test]
fn tasks_and_pipeline_are_tekton_v1_with_pinned_images() {
    for name in TASKS.iter().chain(&["pipeline-csi-windows"]) {
        let doc = load(name);
        assert_eq!(doc["apiVersion"], "tekton.dev/v1", "{name}");
        check_v1(&doc, "", name);
        let spec = &doc["spec"];
        let names = |key: &str| -> Vec<String> {
            spec[key]
                .as_sequence()
                .into_iter()
                .flatten()
                .map(|x| x["name"].as_str().unwrap().to_string())
                .collect()
        };
        let text = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tekton/{name}.yaml")),
        )
        .unwrap();
        for (kind, declared) in [
            ("workspaces", names("workspaces")),
            ("results", names("results")),
        ] {
            for used in text.split(&format!("$({kind}.")).skip(1) {
                let used = used.split('.').next().unwrap();
                assert!(
                    declared.iter().any(|d| d == used),
                    "{name}: undeclared {kind} {used}"
                );
            }
        }
        if doc["kind"] == "Pipeline" {
            continue;
        }
        assert_eq!(doc["kind"], "Task");
        assert_eq!(
            doc["metadata"]["labels"]["app.kubernetes.io/version"],
            env!("CARGO_PKG_VERSION")
        );
        for used in text.split("$(params.").skip(1) {
            let used = used.split([')', '[']).next().unwrap();
            assert!(
                names("params").iter().any(|d| d == used),
                "{name}: undeclared param {used}"
            );
        }
        for step in spec["steps"].as_sequence().unwrap() {
            let image = step["image"].as_str().unwrap();
            let param = image
                .strip_prefix("$(params.")
                .and_then(|p| p.strip_suffix(')'));
            let param = param.unwrap_or_else(|| panic!("{name}: step image {image} is no param"));
            let default = spec["params"]
                .as_sequence()
                .unwrap()
                .iter()
                .find(|p| p["name"] == param)
                .and_then(|p| p["default"].as_str())
                .unwrap();
            assert!(
                default.contains("@sha256:"),
                "{name}: {default} is not pinned by digest"
            );
        }
    }
}

/// The Pipeline's wiring: every task runs one of the Tasks here; every param it passes
/// (plain, matrix or include) is one that Task declares, and every param the Task needs
/// without a default is passed; every `$(tasks.X.results.Y)` names a task of the Pipeline
/// whose Task declares Y; every `$(params.X)` is a Pipeline param; workspaces match.
#[test]
fn the_pipeline_is_wired_by_declared_results_and_params() {
    let pipeline = load("pipeline-csi-windows");
    let spec = &pipeline["spec"];
    let names = |v: &Yaml| -> Vec<String> {
        v.as_sequence()
            .into_iter()
            .flatten()
            .map(|x| x["name"].as_str().unwrap().to_string())
            .collect()
    };
    let pipeline_params = names(&spec["params"]);
    let pipeline_workspaces = names(&spec["workspaces"]);
    let tasks = spec["tasks"].as_sequence().unwrap();
    let task_of = |name: &str| -> Yaml {
        let t = tasks
            .iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("no task {name}"));
        load(t["taskRef"]["name"].as_str().unwrap())
    };
    for t in tasks {
        let task = load(t["taskRef"]["name"].as_str().expect("a taskRef"));
        let declared = names(&task["spec"]["params"]);
        let mut passed = names(&t["params"]);
        passed.extend(names(&t["matrix"]["params"]));
        for include in t["matrix"]["include"].as_sequence().into_iter().flatten() {
            passed.extend(names(&include["params"]));
        }
        for p in &passed {
            assert!(
                declared.contains(p),
                "{:?} passes {p}, which its Task lacks",
                t["name"]
            );
        }
        for p in task["spec"]["params"].as_sequence().unwrap() {
            let name = p["name"].as_str().unwrap().to_string();
            assert!(
                p.get("default").is_some() || passed.contains(&name),
                "{:?} lacks {name}",
                t["name"]
            );
        }
        for w in t["workspaces"].as_sequence().into_iter().flatten() {
            assert!(
                names(&task["spec"]["workspaces"])
                    .contains(&w["name"].as_str().unwrap().to_string())
            );
            assert!(pipeline_workspaces.contains(&w["workspace"].as_str().unwrap().to_string()));
        }
    }
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tekton/pipeline-csi-windows.yaml"),
    )
    .unwrap();
    let mut wired = 0;
    for used in text.split("$(tasks.").skip(1) {
        let mut parts = used.split(['.', ')', '[']);
        let (task, kind, result) = (
            parts.next().unwrap(),
            parts.next().unwrap(),
            parts.next().unwrap(),
        );
        assert_eq!(kind, "results");
        let results = names(&task_of(task)["spec"]["results"]);
        assert!(
            results.iter().any(|r| r == result),
            "{task} declares no result {result}"
        );
        wired += 1;
    }
    assert!(wired >= 2, "the checks are wired by the assemble results");
    for used in text.split("$(params.").skip(1) {
        let used = used.split(')').next().unwrap();
        assert!(
            pipeline_params.iter().any(|p| p == used),
            "undeclared Pipeline param {used}"
        );
    }
}
