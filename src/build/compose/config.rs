//! The base's config made the composed image's (pure): the stage's [`Edit`]s applied in
//! order, the new layer's `diff_id` appended, one history entry, `created` set, `os.version`
//! kept from the base (or the planned build's when the base has none).

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::stage::{Edit, StagePlan, expand};
use crate::digest::Digest;

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

/// A `WORKDIR` against the current one: absolute (`/…`, `C:…`) as written, else joined.
fn workdir(current: Option<&str>, dir: &str) -> String {
    let absolute = dir.starts_with(['/', '\\']) || dir.as_bytes().get(1) == Some(&b':');
    match current.filter(|_| !absolute) {
        Some(c) if !c.is_empty() => format!("{}/{dir}", c.trim_end_matches(['/', '\\'])),
        _ => dir.to_string(),
    }
}

/// Applies the edits to the `config` object of an image config.
fn apply_edits(run: &mut Map<String, Value>, plan: &StagePlan) {
    let mut cmd_set = false;
    for edit in &plan.edits {
        let mut vars = plan.args.clone();
        let env = run.get("Env").and_then(Value::as_array).cloned();
        vars.extend(env_vars(env.as_deref().unwrap_or_default()));
        match edit {
            Edit::Env(pairs) => {
                let mut env = env.unwrap_or_default();
                for (k, v) in pairs {
                    let value = expand(v, &vars);
                    set_env(&mut env, k, &value);
                    vars.insert(k.clone(), value);
                }
                run.insert("Env".into(), Value::Array(env));
            }
            Edit::User(u) => {
                run.insert("User".into(), json!(expand(u, &vars)));
            }
            Edit::Workdir(d) => {
                let current = run.get("WorkingDir").and_then(Value::as_str);
                let dir = workdir(current, &expand(d, &vars));
                run.insert("WorkingDir".into(), json!(dir));
            }
            Edit::Entrypoint(e) => {
                run.insert("Entrypoint".into(), json!(e));
                // As Buildah and Docker do: an ENTRYPOINT drops the base's CMD.
                if !cmd_set {
                    run.remove("Cmd");
                }
            }
            Edit::Cmd(c) => {
                run.insert("Cmd".into(), json!(c));
                cmd_set = true;
            }
            Edit::Labels(pairs) => {
                let labels = run.entry("Labels").or_insert_with(|| json!({}));
                if !labels.is_object() {
                    *labels = json!({});
                }
                for (k, v) in pairs {
                    labels[k.as_str()] = json!(expand(v, &vars));
                }
            }
        }
    }
}

/// The composed image's config from the base's `config`.
pub fn compose_config(mut config: Value, plan: &StagePlan, added: &Added) -> Value {
    if !config.is_object() {
        config = json!({});
    }
    if !config["config"].is_object() {
        config["config"] = json!({});
    }
    if let Some(run) = config["config"].as_object_mut() {
        apply_edits(run, plan);
    }
    if !config["rootfs"]["diff_ids"].is_array() {
        config["rootfs"] = json!({"type": "layers", "diff_ids": []});
    }
    if let Some(ids) = config["rootfs"]["diff_ids"].as_array_mut() {
        ids.push(json!(added.diff_id.to_string()));
    }
    let created = rfc3339(added.created);
    let entry = json!({
        "created": created,
        "created_by": plan.created_by,
        "comment": "composed by imgcheck build (no Buildah stage)",
    });
    match config["history"].as_array_mut() {
        Some(h) => h.push(entry),
        None => config["history"] = json!([entry]),
    }
    config["created"] = json!(created);
    if config.get("os.version").and_then(Value::as_str).is_none()
        && let Some(v) = &added.os_version
    {
        config["os.version"] = json!(v);
    }
    config
}

#[cfg(test)]
mod tests;
