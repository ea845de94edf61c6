//! Label keys and values checked as the API server checks them (k8s.io/apimachinery
//! `pkg/util/validation/validation.go`: `IsQualifiedName` for keys, `IsValidLabelValue` for
//! values), for `nodeSelector`, the pod's labels, node-affinity requirements and tolerations.

use std::collections::BTreeMap;

/// Why `key` is not a label key (`IsQualifiedName`), or `None`: an optional prefix that is a
/// DNS-1123 subdomain (at most 253 characters) and `/`, then a name of 1 to 63 characters,
/// alphanumeric at both ends, with `-`, `_` and `.` between.
pub(super) fn key_problem(key: &str) -> Option<String> {
    let bad = |why: &str| Some(format!("'{key}' is not a label key ({why})"));
    let (prefix, name) = match key.split('/').collect::<Vec<_>>()[..] {
        [name] => (None, name),
        [prefix, name] => (Some(prefix), name),
        _ => return bad("one '/' at most, between a DNS prefix and a name"),
    };
    let bad_prefix = |p: &str| p.is_empty() || p.len() > 253 || !dns_subdomain(p);
    if prefix.is_some_and(bad_prefix) {
        return bad("the prefix must be a lower-case DNS subdomain of at most 253 characters");
    }
    if name.is_empty() || name.len() > 63 || !name_like(name) {
        return bad(
            "the name must be 1 to 63 characters, alphanumeric at both ends, with '-', '_' or '.' between",
        );
    }
    None
}

/// Why `value` is not a label value (`IsValidLabelValue`), or `None`: empty, or at most 63
/// characters, alphanumeric at both ends, with `-`, `_` and `.` between.
pub(super) fn value_problem(value: &str) -> Option<String> {
    (value.len() > 63 || !(value.is_empty() || name_like(value))).then(|| {
        format!(
            "'{value}' is not a label value (at most 63 characters, alphanumeric at both ends, \
             with '-', '_' or '.' between)"
        )
    })
}

/// The first problem of a label map (`ValidateLabels`: keys, then values), in key order.
pub(super) fn map_problem(labels: &BTreeMap<String, String>) -> Option<String> {
    labels
        .iter()
        .find_map(|(k, v)| key_problem(k).or_else(|| value_problem(v)))
}

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]` (`qualifiedNameFmt`, `labelValueFmt`).
fn name_like(s: &str) -> bool {
    let b = s.as_bytes();
    let inner = |c: &u8| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.');
    !b.is_empty()
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter().all(inner)
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*` (`IsDNS1123Subdomain`).
fn dns_subdomain(s: &str) -> bool {
    s.split('.').all(|label| {
        let b = label.as_bytes();
        let ok = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
        !b.is_empty() && ok(&b[0]) && ok(&b[b.len() - 1]) && b.iter().all(|c| ok(c) || *c == b'-')
    })
}
