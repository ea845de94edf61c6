use serde_json::json;

use super::*;
use crate::builder::compose::stage::{Edit, HistoryStep, StageCommand, StagePlan};

fn step(text: &str, files: bool) -> HistoryStep {
    HistoryStep {
        text: text.into(),
        files,
    }
}

fn plan(edits: Vec<Edit>) -> StagePlan {
    StagePlan {
        files_containerfile: String::new(),
        edits,
        args: [("VERSION".to_string(), "1.2".to_string())].into(),
        steps: vec![step("COPY a /a", true), step("USER u", false)],
        escape: '\\',
    }
}

fn composed(edits: Vec<Edit>) -> Value {
    compose_config(base(), &plan(edits), &added()).expect("composes")
}

fn base() -> Value {
    json!({
        "architecture": "amd64",
        "os": "windows",
        "os.version": "10.0.20348.2461",
        "config": {
            "Env": ["PATH=C:\\Windows", "KEEP=1"],
            "Cmd": ["cmd.exe"],
            "WorkingDir": "C:\\",
            "Labels": {"base": "yes"}
        },
        "rootfs": {"type": "layers", "diff_ids": ["sha256:aa"]},
        "history": [{"created_by": "base"}]
    })
}

fn added() -> Added {
    Added {
        diff_id: Digest::sha256(b"layer"),
        created: 1_700_000_000,
        os_version: Some("10.0.20348".into()),
    }
}

/// (edits, field of `config`, expected value): one row per edit kind.
#[test]
fn each_edit_changes_the_base_config_as_buildah_would() {
    let s = |v: &str| v.to_string();
    let cases: Vec<(Vec<Edit>, &str, Value)> = vec![
        (
            vec![Edit::Env(vec![
                (s("PATH"), s("C:\\\\app;${PATH}")),
                (s("V"), s("$VERSION")),
            ])],
            "Env",
            json!(["PATH=C:\\app;C:\\Windows", "KEEP=1", "V=1.2"]),
        ),
        (
            vec![Edit::User(s("ContainerUser"))],
            "User",
            json!("ContainerUser"),
        ),
        // The shell form: Docker's Windows shell when the base sets none, one argument,
        // passed as written.
        (
            vec![Edit::Cmd(StageCommand::Shell(s("app.exe --serve")))],
            "Cmd",
            json!(["cmd", "/S", "/C", "app.exe --serve"]),
        ),
        (
            vec![Edit::Cmd(StageCommand::Shell(s("app.exe --serve")))],
            "ArgsEscaped",
            json!(true),
        ),
        // Every value of one ENV reads the environment from before it; an escaped dollar
        // is a dollar; a default for an unset variable.
        (
            vec![Edit::Env(vec![(s("KEEP"), s("2")), (s("OLD"), s("$KEEP"))])],
            "Env",
            json!(["PATH=C:\\Windows", "KEEP=2", "OLD=1"]),
        ),
        (
            vec![Edit::Env(vec![
                (s("LIT"), s("\\$KEEP")),
                (s("Q"), s("'$KEEP'")),
            ])],
            "Env",
            json!(["PATH=C:\\Windows", "KEEP=1", "LIT=$KEEP", "Q=$KEEP"]),
        ),
        (
            vec![Edit::Env(vec![(s("D"), s("${UNSET:-\"C:\\x y\"}"))])],
            "Env",
            json!(["PATH=C:\\Windows", "KEEP=1", "D=C:\\x y"]),
        ),
        (
            vec![Edit::Env(vec![(s("L"), s("a b"))])],
            "Env",
            json!(["PATH=C:\\Windows", "KEEP=1", "L=a b"]),
        ),
        (
            vec![Edit::Labels(vec![(s("\"a.b\""), s("\"x y\""))])],
            "Labels",
            json!({"base": "yes", "a.b": "x y"}),
        ),
        (
            vec![Edit::Labels(vec![(s("v"), s("$VERSION"))])],
            "Labels",
            json!({"base": "yes", "v": "1.2"}),
        ),
    ];
    check_rows(cases);
}

/// `WORKDIR`, `ENTRYPOINT` and `CMD` rows.
#[test]
fn workdir_and_commands_change_the_base_config_as_docker_on_windows_does() {
    let s = |v: &str| v.to_string();
    let cases: Vec<(Vec<Edit>, &str, Value)> = vec![
        // WORKDIR as Docker on Windows sets it (moby normalizeWorkdirWindows).
        (
            vec![Edit::Workdir(s("app"))],
            "WorkingDir",
            json!("C:\\app"),
        ),
        (
            vec![Edit::Workdir(s("/data"))],
            "WorkingDir",
            json!("C:\\data"),
        ),
        (
            vec![Edit::Workdir(s("c:/data/"))],
            "WorkingDir",
            json!("C:\\data"),
        ),
        (
            vec![Edit::Workdir(s("/data")), Edit::Workdir(s("v$VERSION"))],
            "WorkingDir",
            json!("C:\\data\\v1.2"),
        ),
        (
            vec![Edit::Workdir(s("C:\\\\a")), Edit::Workdir(s("\\\\b"))],
            "WorkingDir",
            json!("C:\\b"),
        ),
        (
            vec![Edit::Entrypoint(StageCommand::Exec(vec![s("/a.exe")]))],
            "Cmd",
            Value::Null,
        ),
        (
            vec![Edit::Entrypoint(StageCommand::Exec(vec![s("/a.exe")]))],
            "Entrypoint",
            json!(["/a.exe"]),
        ),
        (
            vec![
                Edit::Cmd(StageCommand::Exec(vec![s("--x")])),
                Edit::Entrypoint(StageCommand::Exec(vec![s("/a.exe")])),
            ],
            "Cmd",
            json!(["--x"]),
        ),
    ];
    check_rows(cases);
}

fn check_rows(cases: Vec<(Vec<Edit>, &str, Value)>) {
    for (edits, field, want) in cases {
        let shown = format!("{edits:?}");
        assert_eq!(composed(edits)["config"][field], want, "{shown}");
    }
}

#[test]
fn the_layer_history_and_times_are_added_and_os_version_kept() {
    let config = composed(vec![]);
    assert_eq!(
        config["rootfs"]["diff_ids"],
        json!(["sha256:aa", Digest::sha256(b"layer").to_string()])
    );
    assert_eq!(config["created"], "2023-11-14T22:13:20Z");
    assert_eq!(config["history"][1]["created_by"], "COPY a /a");
    assert_eq!(config["history"][1]["empty_layer"], Value::Null);
    assert_eq!(config["history"][1]["created"], "2023-11-14T22:13:20Z");
    assert_eq!(config["os.version"], "10.0.20348.2461");
    let mut bare = base();
    bare.as_object_mut().unwrap().remove("os.version");
    bare.as_object_mut().unwrap().remove("history");
    let config = compose_config(bare, &plan(vec![]), &added()).expect("composes");
    assert_eq!(config["os.version"], "10.0.20348");
    assert_eq!(config["history"].as_array().unwrap().len(), 2);
    // The same inputs, the same bytes.
    assert_eq!(composed(vec![]).to_string(), composed(vec![]).to_string());
}

/// A base whose config sets `Shell` (an image built with `SHELL`): the shell form runs in it,
/// as Docker runs it. An exec form after a shell form clears `ArgsEscaped`.
#[test]
fn the_shell_form_runs_in_the_base_shell() {
    let mut shelled = base();
    shelled["config"]["Shell"] = json!(["powershell", "-Command"]);
    let edits = vec![Edit::Entrypoint(StageCommand::Shell("C:\\app.ps1".into()))];
    let config = compose_config(shelled, &plan(edits), &added()).expect("composes");
    assert_eq!(
        config["config"]["Entrypoint"],
        json!(["powershell", "-Command", "C:\\app.ps1"])
    );
    let edits = vec![
        Edit::Cmd(StageCommand::Shell("a".into())),
        Edit::Cmd(StageCommand::Exec(vec!["b".into()])),
    ];
    assert_eq!(composed(edits)["config"]["ArgsEscaped"], Value::Null);
}

/// Config-only instructions are history entries with `empty_layer`, the layer's entry where
/// its first COPY is (one non-empty entry: the one layer added).
#[test]
fn history_has_an_empty_layer_entry_per_config_instruction() {
    let mut p = plan(vec![]);
    p.steps = vec![
        step("ENV A=1", false),
        step("COPY a /a", true),
        step("COPY b /b", true),
        step("ENTRYPOINT [\"/a\"]", false),
    ];
    let config = compose_config(base(), &p, &added()).expect("composes");
    let added: Vec<(String, bool)> = config["history"].as_array().unwrap()[1..]
        .iter()
        .map(|h| {
            let by = h["created_by"].as_str().unwrap().to_string();
            (by, h["empty_layer"] == json!(true))
        })
        .collect();
    let s = |v: &str| v.to_string();
    assert_eq!(
        added,
        [
            (s("ENV A=1"), true),
            (s("COPY a /a; COPY b /b"), false),
            (s("ENTRYPOINT [\"/a\"]"), true),
        ]
    );
}

/// A base config that is not an image config, or a word that does not read, is an error
/// naming it, never a made-up config.
#[test]
fn configs_and_words_that_cannot_be_composed_are_errors() {
    let no_ids = json!({"config": {}, "rootfs": {"type": "layers"}});
    let cases: Vec<(Value, Vec<Edit>, &str)> = vec![
        (json!("x"), vec![], "the base's config is not a JSON object"),
        (no_ids, vec![], "the base's config has no rootfs.diff_ids"),
        (
            base(),
            vec![Edit::Workdir("D:/data".into())],
            "WORKDIR 'D:/data'",
        ),
        (
            base(),
            vec![Edit::User("${U:?unset}".into())],
            "USER '${U:?unset}'",
        ),
    ];
    for (config, edits, want) in cases {
        let got = compose_config(config, &plan(edits), &added()).map(|_| ());
        assert_eq!(got.map_err(|e| e.to_string()), Err(want.to_string()));
    }
}

/// A base whose config and manifest disagree on the number of layers is not composed.
#[test]
fn a_base_whose_config_does_not_match_its_layers_is_refused() {
    let manifest = json!({"layers": [{"digest": "sha256:aa"}, {"digest": "sha256:bb"}]});
    let got = crate::builder::stage_image::same_layer_count(&manifest, &base(), "base");
    assert_eq!(
        got.map_err(|e| e.to_string()),
        Err("base: config is not an image config (1 diff_ids for the manifest's 2 layers)".into())
    );
    let one = json!({"layers": [{"digest": "sha256:aa"}]});
    assert!(crate::builder::stage_image::same_layer_count(&one, &base(), "base").is_ok());
}

/// What the stage does not touch stays the base's: os.features, architecture, variant.
#[test]
fn platform_fields_stay_the_bases() {
    let mut b = base();
    b["os.features"] = json!(["win32k"]);
    b["variant"] = json!("v1");
    let config = compose_config(b, &plan(vec![]), &added()).expect("composes");
    assert_eq!(config["os.features"], json!(["win32k"]));
    assert_eq!(config["architecture"], "amd64");
    assert_eq!(config["variant"], "v1");
    assert_eq!(config["os"], "windows");
}
