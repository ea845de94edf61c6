//! The JSON document `{"images":[…]}` (schema in docs/json-schema.md).

use serde::Serialize;

use super::placement::{NodePlacement, RunExtras};
use crate::cluster::nodes::NodeRuntime;
use crate::engine::ImageReport;

#[derive(Serialize)]
struct JsonDoc<'a> {
    images: &'a [ImageReport],
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    notes: &'a [String],
    #[serde(skip_serializing_if = "<[NodePlacement]>::is_empty")]
    placements: &'a [NodePlacement],
    #[serde(skip_serializing_if = "<[NodeRuntime]>::is_empty")]
    runtimes: &'a [NodeRuntime],
}

/// The JSON document `{"images":[…]}`, pretty-printed, without a final newline.
pub fn json(reports: &[ImageReport]) -> String {
    json_with(reports, &RunExtras::default())
}

/// The JSON document with the run's notes (`notes`), per-node answer (`placements`) and the
/// nodes' runtimes (`runtimes`), each left out when empty.
pub fn json_with(reports: &[ImageReport], extras: &RunExtras) -> String {
    let doc = JsonDoc {
        images: reports,
        notes: &extras.notes,
        placements: &extras.placements,
        runtimes: &extras.runtimes,
    };
    serde_json::to_string_pretty(&doc).expect("reports serialise")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Verdict;
    use crate::report::tests::report;

    #[test]
    fn images_keep_their_verdict_and_hosts() {
        let doc: serde_json::Value =
            serde_json::from_str(&json(&[report(Verdict::Pass, &[])])).unwrap();
        assert_eq!(doc["images"][0]["verdict"], "pass");
        assert_eq!(
            doc["images"][0]["hosts"][0]["selected"],
            serde_json::Value::Null
        );
    }
}
