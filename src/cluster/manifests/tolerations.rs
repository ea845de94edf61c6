//! A pod spec's `tolerations`, read and checked as the API server validates them
//! (`ValidateTolerations`, k8s.io/kubernetes `pkg/apis/core/validation/validation.go`).

use serde::Deserialize;

use crate::cluster::scheduling::{Effect, Toleration, TolerationOp};

/// One toleration as written (`null` fields read as absent).
#[derive(Deserialize, Default)]
#[serde(default)]
pub(super) struct RawToleration {
    key: Option<String>,
    operator: Option<String>,
    value: Option<String>,
    effect: Option<String>,
}

/// The tolerations of `raw` at `at` (`spec.template.spec.tolerations`), or the field and
/// what is wrong: an operator other than `Equal`/`Exists` (empty is `Equal`), a value with
/// `Exists`, an empty key without `Exists`, an unknown effect.
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
