//! A pod spec's `tolerations`, read and checked as the API server validates them
//! (`ValidateTolerations`, k8s.io/kubernetes `pkg/apis/core/validation/validation.go`).

use serde::Deserialize;

use super::labels;
use crate::scheduling::{Effect, Toleration, TolerationOp};

/// One toleration as written (`null` fields read as absent).
#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub(super) struct RawToleration {
    key: Option<String>,
    operator: Option<String>,
    value: Option<String>,
    effect: Option<String>,
    toleration_seconds: Option<i64>,
}

/// The tolerations of `raw` at `at` (`spec.template.spec.tolerations`), or the field and
/// what is wrong: a key that is not a label key, an operator other than `Equal`/`Exists`
/// (empty is `Equal`), a value with `Exists` or one that is not a label value with `Equal`,
/// an empty key without `Exists`, an unknown effect, `tolerationSeconds` with an effect other
/// than `NoExecute`.
pub(super) fn convert(
    raw: &[RawToleration],
    at: &str,
) -> Result<Vec<Toleration>, (String, String)> {
    raw.iter()
        .enumerate()
        .map(|(i, r)| one(r, &format!("{at}[{i}]")))
        .collect()
}

fn one(r: &RawToleration, at: &str) -> Result<Toleration, (String, String)> {
    let text = |o: &Option<String>| o.clone().unwrap_or_default();
    let (key, value) = (text(&r.key), text(&r.value));
    let op = match text(&r.operator).as_str() {
        "" | "Equal" => TolerationOp::Equal,
        "Exists" => TolerationOp::Exists,
        other => {
            let reason = format!("'{other}' is not Equal or Exists");
            return Err((format!("{at}.operator"), reason));
        }
    };
    if op == TolerationOp::Exists && !value.is_empty() {
        let reason = "must be empty when the operator is Exists".to_string();
        return Err((format!("{at}.value"), reason));
    }
    if key.is_empty() && op != TolerationOp::Exists {
        let reason = "an empty key tolerates every taint only with operator Exists".to_string();
        return Err((format!("{at}.operator"), reason));
    }
    if let Some(reason) = Some(&key)
        .filter(|k| !k.is_empty())
        .and_then(|k| labels::key_problem(k))
    {
        return Err((format!("{at}.key"), reason));
    }
    if let Some(reason) = labels::value_problem(&value) {
        return Err((format!("{at}.value"), reason));
    }
    if r.toleration_seconds.is_some() && text(&r.effect) != "NoExecute" {
        let reason = format!(
            "'{}' must be NoExecute when tolerationSeconds is set",
            text(&r.effect)
        );
        return Err((format!("{at}.effect"), reason));
    }
    let effect = match text(&r.effect).as_str() {
        "" => None,
        e => Some(Effect::parse(e).ok_or_else(|| {
            let reason = format!("'{e}' is not NoSchedule, PreferNoSchedule or NoExecute");
            (format!("{at}.effect"), reason)
        })?),
    };
    Ok(Toleration {
        key,
        op,
        value,
        effect,
    })
}
