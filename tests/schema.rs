//! The machine-readable output keeps to its published schema (`docs/report.schema.json`,
//! explained in `docs/json-schema.md`): the real binary's `--format json` and
//! `--format konflux` output over the fixture layouts, a batch, an unreachable registry and
//! `mirror-check`, each validated. No registry is started: everything here runs offline.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use jsonschema::Validator;
use serde_json::{Value, json};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The schema file as shipped.
fn schema() -> Value {
    let path = root().join("docs/report.schema.json");
    let text = std::fs::read_to_string(&path).expect("docs/report.schema.json is readable");
    serde_json::from_str(&text).expect("docs/report.schema.json is JSON")
}

/// A validator for one of the schema's `$defs` (`imagesReport`, `testOutput`), or for the
/// whole schema when `def` is `None`.
fn validator(def: Option<&str>) -> Validator {
    let full = schema();
    let doc = match def {
        None => full,
        Some(name) => json!({
            "$schema": full["$schema"],
            "$defs": full["$defs"],
            "$ref": format!("#/$defs/{name}"),
        }),
    };
    jsonschema::validator_for(&doc).expect("the schema compiles")
}

/// Every way `instance` breaks the schema, one line each (empty when it conforms).
fn violations(v: &Validator, instance: &Value) -> Vec<String> {
    v.iter_errors(instance)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect()
}

#[track_caller]
pub(crate) fn assert_conforms(def: &str, what: &str, instance: &Value) {
    for v in [validator(Some(def)), validator(None)] {
        let errors = violations(&v, instance);
        assert!(
            errors.is_empty(),
            "{what} breaks docs/report.schema.json ($defs/{def}):\n  {}\noutput: {instance:#}",
            errors.join("\n  ")
        );
    }
}

/// Runs imgcheck (offline: no retries, short deadline) and parses its standard output.
fn run(args: &[&str]) -> (Value, Option<i32>) {
    let out = Command::new(env!("CARGO_BIN_EXE_imgcheck"))
        .current_dir(root())
        .env("IMGCHECK_SANDBOX_IMAGE", "none")
        .args(["--retries", "0", "--timeout", "10s"])
        .args(args)
        .output()
        .expect("imgcheck runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let doc = serde_json::from_str(&stdout).unwrap_or_else(|e| {
        panic!(
            "imgcheck {args:?} printed no JSON ({e}): {stdout}\nstderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (doc, out.status.code())
}

/// Every fixture layout's name, sorted.
fn layouts() -> Vec<String> {
    let dir = root().join("fixtures/layouts");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .expect("fixtures/layouts is readable")
        .map(|e| {
            e.expect("directory entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    names.sort();
    names
}

fn layout_ref(name: &str) -> String {
    format!("oci:fixtures/layouts/{name}")
}

/// The rule ids of every finding in an images report.
fn rules_of(doc: &Value) -> BTreeSet<String> {
    doc["images"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|image| image["findings"].as_array().cloned().unwrap_or_default())
        .filter_map(|f| f["rule"].as_str().map(str::to_string))
        .collect()
}

#[test]
fn the_schema_is_a_valid_draft_2020_12_schema() {
    let s = schema();
    assert_eq!(s["$schema"], "https://json-schema.org/draft/2020-12/schema");
    if let Err(e) = jsonschema::meta::validate(&s) {
        panic!("docs/report.schema.json is not a valid JSON Schema: {e}");
    }
}

#[test]
fn verify_json_of_every_fixture_layout_conforms() {
    let mut seen = BTreeSet::new();
    for name in layouts() {
        let reference = layout_ref(&name);
        let (doc, code) = run(&["verify", &reference, "--format", "json"]);
        assert!(matches!(code, Some(0 | 1)), "{name}: exit {code:?}");
        assert_conforms("imagesReport", &format!("verify {name}"), &doc);
        seen.extend(rules_of(&doc));
    }
    // --deep adds the layer rules (legacy-buildah: layers in the Linux layout).
    let (doc, _) = run(&[
        "verify",
        "oci:fixtures/layouts/legacy-buildah",
        "--deep",
        "--format",
        "json",
    ]);
    assert_conforms("imagesReport", "verify --deep legacy-buildah", &doc);
    seen.extend(rules_of(&doc));
    // --nodes adds `nodes` to the host rows (issue 13).
    let (doc, code) = run(&[
        "verify",
        "oci:fixtures/layouts/ltsc2022-only",
        "--nodes",
        "fixtures/nodes/ocp-wmco.json",
        "--format",
        "json",
    ]);
    assert_eq!(code, Some(1));
    assert!(doc["images"][0]["hosts"][0]["nodes"].is_array(), "{doc}");
    assert_conforms("imagesReport", "verify --nodes ltsc2022-only", &doc);
    // The layouts exercise most rules; the test means little if they stop doing so.
    for rule in [
        "os-version-missing",
        "wrong-build-selected",
        "no-match",
        "platform-mismatch",
        "child-missing",
        "digest-mismatch",
        "duplicate-platform",
        "foreign-layer",
        "windows-layer-format",
        "unsupported-build",
        "schema1",
        "bad-manifest",
        "attestation",
        "not-an-index",
    ] {
        assert!(seen.contains(rule), "no fixture produced {rule}: {seen:?}");
    }
}

#[test]
fn verify_json_of_a_batch_and_of_an_unreachable_registry_conforms() {
    let refs: Vec<String> = ["good", "no-os-version", "foreign-layer", "bad-json"]
        .iter()
        .map(|n| layout_ref(n))
        .collect();
    let mut args = vec!["verify", "--format", "json"];
    args.extend(refs.iter().map(String::as_str));
    let (doc, code) = run(&args);
    assert_eq!(code, Some(1));
    assert_eq!(doc["images"].as_array().map(Vec::len), Some(4));
    assert_conforms("imagesReport", "a batch of four layouts", &doc);

    // Nothing listens on port 1: the top object is never fetched, digest is null.
    let (doc, code) = run(&["verify", "127.0.0.1:1/csi/driver:v1", "--format", "json"]);
    assert_eq!(code, Some(3));
    assert_eq!(doc["images"][0]["digest"], Value::Null);
    assert_eq!(doc["images"][0]["verdict"], "error");
    assert_conforms("imagesReport", "an unreachable registry", &doc);
}

/// A registries.conf that mirrors `127.0.0.1:1/mirrored` (unreachable) and nothing else.
fn registries_conf(dir: &Path) -> PathBuf {
    let path = dir.join("registries.conf");
    std::fs::write(
        &path,
        "[[registry]]\nprefix = \"127.0.0.1:1/mirrored\"\nlocation = \"127.0.0.1:1/mirrored\"\n\
         [[registry.mirror]]\nlocation = \"127.0.0.1:1/mirror\"\n",
    )
    .expect("write registries.conf");
    path
}

const PINNED: &str = "sha256:56589d3b6f541617d83962b4fe319ad3760f178e8ad6eef8731d6c27cf7f8661";

#[test]
fn mirror_check_json_and_konflux_conform() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let conf = registries_conf(dir.path());
    let conf = conf.to_str().expect("UTF-8 path");
    let not_covered = format!("127.0.0.1:1/elsewhere/driver@{PINNED}");
    let unreachable = format!("127.0.0.1:1/mirrored/driver@{PINNED}");
    for format in ["json", "konflux"] {
        let (doc, _) = run(&[
            "mirror-check",
            "--registries-conf",
            conf,
            "--format",
            format,
            &not_covered,
            &unreachable,
        ]);
        if format == "json" {
            let rules = rules_of(&doc);
            assert!(rules.contains("mirror-not-configured"), "{doc:#}");
            assert_conforms("imagesReport", "mirror-check --format json", &doc);
        } else {
            assert_conforms("testOutput", "mirror-check --format konflux", &doc);
        }
    }
}

#[test]
fn konflux_output_conforms_for_every_result() {
    let unreachable = "127.0.0.1:1/csi/driver:v1".to_string();
    let cases = [
        (vec![layout_ref("good")], "SUCCESS"),
        (vec![layout_ref("foreign-layer")], "WARNING"),
        (vec![layout_ref("good"), unreachable.clone()], "ERROR"),
        (
            vec![layout_ref("no-os-version"), layout_ref("schema1")],
            "FAILURE",
        ),
        // ADR 0030's rank order: ERROR above FAILURE.
        (
            vec![
                layout_ref("no-os-version"),
                layout_ref("schema1"),
                unreachable,
            ],
            "ERROR",
        ),
    ];
    for (refs, want) in cases {
        let mut args = vec!["verify", "--format", "konflux"];
        args.extend(refs.iter().map(String::as_str));
        let (doc, _) = run(&args);
        assert_eq!(doc["result"], want, "{refs:?}: {doc}");
        assert_conforms("testOutput", &format!("konflux {refs:?}"), &doc);
    }
}

/// Applies `change` to a copy of `doc` and asserts the schema refuses the result.
#[track_caller]
fn assert_refused(def: &str, doc: &Value, what: &str, change: impl FnOnce(&mut Value)) {
    let mut changed = doc.clone();
    change(&mut changed);
    assert!(
        !violations(&validator(Some(def)), &changed).is_empty(),
        "the schema accepts output with {what}: {changed:#}"
    );
}

#[test]
fn the_schema_refuses_output_that_gains_or_loses_a_field_or_invents_a_rule() {
    let (doc, _) = run(&[
        "verify",
        "oci:fixtures/layouts/no-os-version",
        "--format",
        "json",
    ]);
    assert_conforms("imagesReport", "verify no-os-version", &doc);
    let image = |d: &mut Value| {
        d["images"][0]
            .as_object_mut()
            .expect("image object")
            .clone()
    };
    assert_refused("imagesReport", &doc, "an unknown field", |d| {
        d["images"][0]["surprise"] = json!(1);
    });
    assert_refused("imagesReport", &doc, "no verdict", |d| {
        let mut i = image(d);
        i.remove("verdict");
        d["images"][0] = Value::Object(i);
    });
    assert_refused("imagesReport", &doc, "a finding without a hint", |d| {
        d["images"][0]["findings"][0]
            .as_object_mut()
            .expect("finding object")
            .remove("hint");
    });
    assert_refused("imagesReport", &doc, "a rule id outside the list", |d| {
        d["images"][0]["findings"][0]["rule"] = json!("made-up-rule");
    });
    assert_refused("imagesReport", &doc, "a host without a runtime", |d| {
        d["images"][0]["hosts"][0]
            .as_object_mut()
            .expect("host object")
            .remove("runtime");
    });

    let (doc, _) = run(&["verify", "oci:fixtures/layouts/good", "--format", "konflux"]);
    assert_conforms("testOutput", "konflux good", &doc);
    assert_refused("testOutput", &doc, "no warnings count", |d| {
        d.as_object_mut().expect("object").remove("warnings");
    });
    assert_refused("testOutput", &doc, "an unknown result", |d| {
        d["result"] = json!("PASSED");
    });
}

/// docs/rules.md's rule tables (`| \`rule-id\` | severity | … |`) and the schema's `ruleId`
/// enum name the same rules.
#[test]
fn the_schema_lists_exactly_the_rules_the_docs_document() {
    let rules = std::fs::read_to_string(root().join("docs/rules.md")).expect("docs/rules.md");
    let documented: BTreeSet<String> = rules
        .lines()
        .filter_map(|line| {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            let severity = cells.get(2)?;
            ["error", "warning", "info"]
                .contains(severity)
                .then(|| cells[1].to_string())
        })
        .flat_map(|ids| {
            ids.split('/')
                .map(|id| id.trim().trim_matches('`').to_string())
                .collect::<Vec<_>>()
        })
        .collect();
    let listed: BTreeSet<String> = schema()["$defs"]["ruleId"]["enum"]
        .as_array()
        .expect("ruleId enum")
        .iter()
        .filter_map(|v| v.as_str().map(str::to_string))
        .collect();
    assert_eq!(
        documented, listed,
        "docs/rules.md rule tables vs schema ruleId enum"
    );
}

/// Issue 20: `mirror-check --plan --format json` keeps to `$defs/plans`, offline.
#[test]
fn plan_output_keeps_to_its_schema_and_needs_no_network() {
    let dir = tempfile::tempdir().unwrap();
    let idms = dir.path().join("idms.yaml");
    std::fs::write(
        &idms,
        "apiVersion: config.openshift.io/v1\nkind: ImageDigestMirrorSet\nmetadata: {name: r}\nspec:\n  imageDigestMirrors:\n  - source: quay.io/openshift-release-dev/ocp-v4.0-art-dev\n    mirrors: [mirror.example.com:5000/ocp4/openshift4]\n",
    )
    .unwrap();
    // Nothing listens on 127.0.0.1:1: a plan that asked the network would not say PASS fast.
    let (doc, code) = run(&[
        "mirror-check",
        "--plan",
        "--idms",
        idms.to_str().unwrap(),
        "127.0.0.1:1/a/b:v1",
        "quay.io/openshift-release-dev/ocp-v4.0-art-dev:4.18",
        "--os",
        "windows",
        "--format",
        "json",
    ]);
    assert_eq!(code, Some(0));
    assert_conforms("plans", "mirror-check --plan --format json", &doc);
    assert_eq!(doc["plans"].as_array().unwrap().len(), 2, "{doc:#}");
}

/// With `--nodes` and pod templates, `runtimes[]` and the placements' `runtime_version` and
/// `runtime_reason` keep to the schema, which refuses a runtime without its reason or nodes and
/// a placement without its runtime's reason (issue 21 item 3). Offline: the templates' images
/// are unreachable, their placements fail `fetch-error`, and still name each node's runtime.
#[test]
fn node_runtimes_and_their_reasons_keep_to_the_schema() {
    let (doc, _) = run(&[
        "verify",
        "--from-manifests",
        "fixtures/manifests",
        "--nodes",
        "fixtures/nodes/ocp-wmco.json",
        "--format",
        "json",
    ]);
    assert_conforms("imagesReport", "verify --nodes --from-manifests", &doc);
    let runtimes = doc["runtimes"].as_array().expect("runtimes[]");
    let versions: Vec<&str> = runtimes
        .iter()
        .map(|r| r["version"].as_str().unwrap())
        .collect();
    assert_eq!(
        versions,
        [
            "containerd://1.7.27",
            "cri-o://1.31.6-3.rhaos4.18.gitb5a7b3a.el9"
        ]
    );
    assert!(
        doc["placements"]
            .as_array()
            .expect("placements[]")
            .iter()
            .all(|p| p["runtime_reason"].is_string() && p["runtime_version"].is_string()),
        "{doc:#}"
    );
    assert_refused("imagesReport", &doc, "a runtime without a reason", |d| {
        d["runtimes"][0].as_object_mut().unwrap().remove("reason");
    });
    assert_refused("imagesReport", &doc, "a runtime without nodes", |d| {
        d["runtimes"][0]["nodes"] = json!([]);
    });
    assert_refused("imagesReport", &doc, "a runtime of no profile", |d| {
        d["runtimes"][0]["profile"] = json!("containerd-1.3");
    });
    assert_refused(
        "imagesReport",
        &doc,
        "a placement without its runtime's reason",
        |d| {
            d["placements"][0]
                .as_object_mut()
                .unwrap()
                .remove("runtime_reason");
        },
    );
}
