//! The JSON document `{"images":[…]}` (schema in docs/json-schema.md).

use serde::Serialize;

use crate::engine::ImageReport;

#[derive(Serialize)]
struct JsonDoc<'a> {
    images: &'a [ImageReport],
}

/// The JSON document `{"images":[…]}`, pretty-printed, without a final newline.
pub fn json(reports: &[ImageReport]) -> String {
    serde_json::to_string_pretty(&JsonDoc { images: reports }).expect("reports serialise")
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
