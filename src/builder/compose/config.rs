//! The base's config made the composed image's (pure): the stage's [`Edit`]s applied in
//! order, the new layer's `diff_id` appended, one history entry, `created` set, `os.version`
//! kept from the base (or the planned build's when the base has none).

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::lex::{LexError, word};
use super::paths::{PathError, to_root, to_windows};
use super::stage::{Edit, StageCommand, StagePlan};
use crate::digest::Digest;

/// Docker's shell on Windows for the shell form of `ENTRYPOINT`/`CMD` when the image sets
/// none (Dockerfile reference, `SHELL`).
pub const WINDOWS_SHELL: [&str; 3] = ["cmd", "/S", "/C"];

/// Why the base's config cannot be made the composed image's.
#[derive(Debug, Clone, thiserror::Error)]
pub enum BaseConfigError {
    /// The config is not a JSON object, or has no `rootfs.diff_ids` array.
    #[error("the base's config {0}")]
    Shape(&'static str),
    /// A word of the stage does not read against the config.
    #[error("{instruction} '{word}'")]
    Word {
        /// The instruction.
        instruction: &'static str,
        /// The word as written.
        word: String,
        /// Why.
        #[source]
        source: LexError,
    },
    /// A `WORKDIR` a Windows container cannot have.
    #[error("WORKDIR '{0}'")]
    Workdir(String, #[source] PathError),
}

/// What the config gets besides the edits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Added {
    /// The new layer's `diff_id`.
    pub diff_id: Digest,
    /// The image's creation time (seconds since the epoch).
    pub created: u64,
    /// The os.version to set when the base's config has none.
    pub os_version: Option<String>,
}

/// `seconds` as RFC 3339 (`2023-11-14T22:13:20Z`).
fn rfc3339(seconds: u64) -> String {
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_secs(seconds);
    humantime::format_rfc3339_seconds(t).to_string()
}

/// `NAME=VALUE` entries as a map (first `=` splits), keeping their order.
fn env_vars(env: &[Value]) -> BTreeMap<String, String> {
    env.iter()
        .filter_map(Value::as_str)
        .filter_map(|e| e.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Sets `name=value` in the `Env` array (replacing an entry of that name).
fn set_env(env: &mut Vec<Value>, name: &str, value: &str) {
    let entry = Value::String(format!("{name}={value}"));
    let prefix = format!("{name}=");
    match env
        .iter_mut()
        .find(|e| e.as_str().is_some_and(|s| s.starts_with(&prefix)))
    {
        Some(e) => *e = entry,
        None => env.push(entry),
    }
}

/// A `WORKDIR` against the current one, as Docker on Windows sets it: `C:\app` whether written
/// `/app`, `\app`, `c:/app` or `app` in `C:\`.
fn workdir(current: Option<&str>, dir: &str) -> Result<String, BaseConfigError> {
    let failed = |e| BaseConfigError::Workdir(dir.to_string(), e);
    let cwd = match current.filter(|c| !c.is_empty()) {
        Some(c) => to_root(c, Some("/")).map_err(failed)?,
        None => "/".to_string(),
    };
    Ok(to_windows(&to_root(dir, Some(&cwd)).map_err(failed)?))
}

/// A word of `instruction` read against `vars`.
fn read(
    instruction: &'static str,
    raw: &str,
    plan: &StagePlan,
    vars: &BTreeMap<String, String>,
) -> Result<String, BaseConfigError> {
    word(raw, plan.escape, vars).map_err(|source| BaseConfigError::Word {
        instruction,
        word: raw.to_string(),
        source,
    })
}

/// Sets `Entrypoint` or `Cmd` (`field`): a shell form runs in the image's `Shell` (else
/// Docker's Windows default), its text one argument passed as written (`ArgsEscaped`, as
/// Docker on Windows sets it); an exec form's arguments are passed each as one.
fn set_command(run: &mut Map<String, Value>, field: &str, command: &StageCommand) {
    let (args, escaped) = match command {
        StageCommand::Exec(v) => (v.clone(), false),
        StageCommand::Shell(text) => {
            let shell: Vec<String> = run
                .get("Shell")
                .and_then(Value::as_array)
                .map(|s| {
                    s.iter()
                        .filter_map(Value::as_str)
                        .map(String::from)
                        .collect()
                })
                .filter(|s: &Vec<String>| !s.is_empty())
                .unwrap_or_else(|| WINDOWS_SHELL.map(String::from).to_vec());
            (shell.into_iter().chain([text.clone()]).collect(), true)
        }
    };
    run.insert(field.into(), json!(args));
    if escaped {
        run.insert("ArgsEscaped".into(), json!(true));
    } else {
        run.remove("ArgsEscaped");
    }
}

/// Applies the edits to the `config` object of an image config.
fn apply_edits(run: &mut Map<String, Value>, plan: &StagePlan) -> Result<(), BaseConfigError> {
    let mut cmd_set = false;
    for edit in &plan.edits {
        let mut vars = plan.args.clone();
        let env = run.get("Env").and_then(Value::as_array).cloned();
        vars.extend(env_vars(env.as_deref().unwrap_or_default()));
        match edit {
            Edit::Env(pairs) => {
                // Every value of one ENV reads the environment from before it (Docker).
                let mut env = env.unwrap_or_default();
                for (k, v) in pairs {
                    let name = read("ENV", k, plan, &vars)?;
                    set_env(&mut env, &name, &read("ENV", v, plan, &vars)?);
                }
                run.insert("Env".into(), Value::Array(env));
            }
            Edit::User(u) => {
                run.insert("User".into(), json!(read("USER", u, plan, &vars)?));
            }
            Edit::Workdir(d) => {
                let current = run.get("WorkingDir").and_then(Value::as_str);
                let dir = workdir(current, &read("WORKDIR", d, plan, &vars)?)?;
                run.insert("WorkingDir".into(), json!(dir));
            }
            Edit::Entrypoint(e) => {
                set_command(run, "Entrypoint", e);
                // As Buildah and Docker do: an ENTRYPOINT drops the CMD the stage did not set.
                if !cmd_set {
                    run.remove("Cmd");
                }
            }
            Edit::Cmd(c) => {
                set_command(run, "Cmd", c);
                cmd_set = true;
            }
            Edit::Labels(pairs) => {
                let mut read_pairs = Vec::new();
                for (k, v) in pairs {
                    read_pairs.push((
                        read("LABEL", k, plan, &vars)?,
                        read("LABEL", v, plan, &vars)?,
                    ));
                }
                let labels = run.entry("Labels").or_insert_with(|| json!({}));
                if !labels.is_object() {
                    *labels = json!({});
                }
                for (k, v) in read_pairs {
                    labels[k.as_str()] = json!(v);
                }
            }
        }
    }
    Ok(())
}

/// The history entries of the stage: one per instruction that sets config (`empty_layer`),
/// and one for the stage's layer where its first `COPY`/`ADD` is, naming them all.
fn history(plan: &StagePlan, created: &str) -> Vec<Value> {
    let copies: Vec<&str> = plan
        .steps
        .iter()
        .filter(|s| s.files)
        .map(|s| s.text.as_str())
        .collect();
    let layer = json!({
        "created": created,
        "created_by": if copies.is_empty() { "(no files)".to_string() } else { copies.join("; ") },
        "comment": "composed by imgcheck build (no Buildah stage)",
    });
    let mut out = Vec::new();
    let mut layer = Some(layer);
    for step in &plan.steps {
        if step.files {
            out.extend(layer.take());
        } else {
            out.push(json!({"created": created, "created_by": step.text, "empty_layer": true}));
        }
    }
    out.extend(layer);
    out
}

/// The composed image's config from the base's `config`.
pub fn compose_config(
    mut config: Value,
    plan: &StagePlan,
    added: &Added,
) -> Result<Value, BaseConfigError> {
    if !config.is_object() {
        return Err(BaseConfigError::Shape("is not a JSON object"));
    }
    if !config["config"].is_object() {
        config["config"] = json!({});
    }
    if let Some(run) = config["config"].as_object_mut() {
        apply_edits(run, plan)?;
    }
    let ids = config["rootfs"]["diff_ids"]
        .as_array_mut()
        .ok_or(BaseConfigError::Shape("has no rootfs.diff_ids"))?;
    ids.push(json!(added.diff_id.to_string()));
    let created = rfc3339(added.created);
    let entries = history(plan, &created);
    match config["history"].as_array_mut() {
        Some(h) => h.extend(entries),
        None => config["history"] = Value::Array(entries),
    }
    config["created"] = json!(created);
    if config.get("os.version").and_then(Value::as_str).is_none()
        && let Some(v) = &added.os_version
    {
        config["os.version"] = json!(v);
    }
    Ok(config)
}

#[cfg(test)]
mod tests;
