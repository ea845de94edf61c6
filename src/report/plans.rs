//! `mirror-check --plan`: the ordered manifest requests of each reference for each node OS in
//! scope, as one JSON document `{"plans":[…]}` (docs/json-schema.md, "Pull plans") or a
//! readable table.

use serde::Serialize;

use crate::escape::escape;
use crate::mirror::pull::NodePlan;

#[derive(Serialize)]
struct Plans<'a> {
    plans: Vec<PlanRow<'a>>,
}

#[derive(Serialize)]
struct PlanRow<'a> {
    reference: String,
    os: &'static str,
    runtime: &'static str,
    configured_by: &'static str,
    attempts: Vec<AttemptRow<'a>>,
}

#[derive(Serialize)]
struct AttemptRow<'a> {
    url: &'a str,
    kind: &'static str,
    /// The same URL was asked before in this pull: containerd asks every host it is given,
    /// and hosts.toml gives this one twice (a mirror that is also the `server`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    repeated: bool,
}

fn rows(plans: &[NodePlan]) -> Vec<PlanRow<'_>> {
    plans
        .iter()
        .map(|p| PlanRow {
            reference: p.reference.to_string(),
            os: p.os.name(),
            runtime: p.os.runtime(),
            configured_by: p.os.configured_by(),
            attempts: (p.attempts.iter().enumerate())
                .map(|(i, a)| AttemptRow {
                    url: &a.url,
                    kind: a.kind.name(),
                    repeated: p.attempts[..i].iter().any(|b| b.url == a.url),
                })
                .collect(),
        })
        .collect()
}

/// The plans as one JSON document and a newline.
pub fn plans_json(plans: &[NodePlan]) -> String {
    let doc = Plans { plans: rows(plans) };
    let mut s = serde_json::to_string(&doc).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"));
    s.push('\n');
    s
}

/// The plans as a table: per reference and OS a heading, then one numbered line per request
/// (`mirror` or `source`, then the URL, and why when it was asked before); a pull that asks
/// nothing says so.
pub fn plans_text(plans: &[NodePlan]) -> String {
    let mut out = String::new();
    for p in rows(plans) {
        out.push_str(&format!(
            "{}  {} nodes ({}, {})\n",
            escape(&p.reference),
            p.os,
            p.runtime,
            p.configured_by
        ));
        if p.attempts.is_empty() {
            out.push_str("   -  no host may serve this pull: it fails\n");
        }
        for (i, a) in p.attempts.iter().enumerate() {
            let again = match a.repeated {
                true => {
                    "  (asked again: hosts.toml names this host twice, as a mirror and as its server)"
                }
                false => "",
            };
            out.push_str(&format!(
                "  {:>2}  {:<6}  {}{again}\n",
                i + 1,
                a.kind,
                escape(a.url)
            ));
        }
    }
    out
}
