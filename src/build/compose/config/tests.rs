use serde_json::json;

use super::*;
use crate::build::compose::stage::{Edit, StagePlan};

fn plan(edits: Vec<Edit>) -> StagePlan {
    StagePlan {
        files_containerfile: String::new(),
        edits,
        args: [("VERSION".to_string(), "1.2".to_string())].into(),
        created_by: "COPY a /a; USER u".into(),
    }
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
                (s("PATH"), s("C:\\app;${PATH}")),
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
        (vec![Edit::Workdir(s("app"))], "WorkingDir", json!("C:/app")),
        (
            vec![Edit::Workdir(s("/data"))],
            "WorkingDir",
            json!("/data"),
        ),
        (
            vec![Edit::Workdir(s("/data")), Edit::Workdir(s("v$VERSION"))],
            "WorkingDir",
            json!("/data/v1.2"),
        ),
        (
            vec![Edit::Entrypoint(vec![s("/a.exe")])],
            "Cmd",
            Value::Null,
        ),
        (
            vec![Edit::Entrypoint(vec![s("/a.exe")])],
            "Entrypoint",
            json!(["/a.exe"]),
        ),
        (
            vec![
                Edit::Cmd(vec![s("--x")]),
                Edit::Entrypoint(vec![s("/a.exe")]),
            ],
            "Cmd",
            json!(["--x"]),
        ),
        (
            vec![Edit::Labels(vec![(s("v"), s("$VERSION"))])],
            "Labels",
            json!({"base": "yes", "v": "1.2"}),
        ),
    ];
    for (edits, field, want) in cases {
        let shown = format!("{edits:?}");
        let config = compose_config(base(), &plan(edits), &added());
        assert_eq!(config["config"][field], want, "{shown}");
    }
}

#[test]
fn the_layer_history_and_times_are_added_and_os_version_kept() {
    let config = compose_config(base(), &plan(vec![]), &added());
    assert_eq!(
        config["rootfs"]["diff_ids"],
        json!(["sha256:aa", Digest::sha256(b"layer").to_string()])
    );
    assert_eq!(config["created"], "2023-11-14T22:13:20Z");
    assert_eq!(config["history"][1]["created_by"], "COPY a /a; USER u");
    assert_eq!(config["history"][1]["created"], "2023-11-14T22:13:20Z");
    assert_eq!(config["os.version"], "10.0.20348.2461");
    let mut bare = base();
    bare.as_object_mut().unwrap().remove("os.version");
    bare.as_object_mut().unwrap().remove("history");
    let config = compose_config(bare, &plan(vec![]), &added());
    assert_eq!(config["os.version"], "10.0.20348");
    assert_eq!(config["history"].as_array().unwrap().len(), 1);
    // The same inputs, the same bytes.
    let again = compose_config(base(), &plan(vec![]), &added());
    assert_eq!(
        compose_config(base(), &plan(vec![]), &added()).to_string(),
        again.to_string()
    );
}
