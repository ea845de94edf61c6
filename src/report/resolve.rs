//! `resolve`'s JSON document: the host, the runtime, what it selects, every candidate, and the
//! nested indexes it descended into.

use serde::Serialize;

use crate::engine::{CandidateReport, HostResolution};
use crate::platform::{Platform, RuntimeProfile};
use crate::policy::Host;

/// The fields of the document. It is printed through a `serde_json::Value`, whose maps sort
/// their keys: the keys come out in alphabetical order at every level, as they always have.
#[derive(Serialize)]
struct ResolveDoc<'a> {
    reference: &'a str,
    host: String,
    runtime: &'static str,
    digest: &'a Option<String>,
    platform: &'a Option<Platform>,
    config_platform: &'a Option<Platform>,
    candidates: &'a [CandidateReport],
    /// The nested indexes the selection descended into, outermost first (empty: none).
    descended_into: &'a [String],
}

/// The JSON document of `resolve --format json` for `reference` on `host` with `runtime`,
/// pretty-printed, without a final newline.
pub fn resolve_json(
    reference: &str,
    host: &Platform,
    runtime: RuntimeProfile,
    resolution: &HostResolution,
) -> String {
    let value = doc(reference, host, runtime, resolution);
    serde_json::to_string_pretty(&value).expect("serialises")
}

/// The document of one host as a JSON value.
fn doc(
    reference: &str,
    host: &Platform,
    runtime: RuntimeProfile,
    resolution: &HostResolution,
) -> serde_json::Value {
    let doc = ResolveDoc {
        reference,
        host: host.to_string(),
        runtime: runtime.name(),
        digest: &resolution.digest,
        platform: &resolution.platform,
        config_platform: &resolution.config_platform,
        candidates: &resolution.candidates,
        descended_into: &resolution.descended_into,
    };
    serde_json::to_value(&doc).expect("serialises")
}

/// The JSON document of `resolve --nodes --format json`: an array with one [`resolve_json`]
/// document per host row (resolved under `runtime` when the row names none), each with the
/// `nodes` it stands for; pretty-printed, without a final newline.
pub fn resolve_rows_json(
    reference: &str,
    rows: &[(Host, HostResolution)],
    runtime: RuntimeProfile,
) -> String {
    let docs: Vec<serde_json::Value> = rows
        .iter()
        .map(|(host, r)| {
            let mut value = doc(
                reference,
                &host.platform,
                host.runtime.unwrap_or(runtime),
                r,
            );
            value["nodes"] = serde_json::json!(host.nodes);
            value
        })
        .collect();
    serde_json::to_string_pretty(&docs).expect("serialises")
}
