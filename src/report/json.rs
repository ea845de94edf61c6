//! The JSON document `{"images":[…]}` (schema in docs/json-schema.md), whole ([`json_with`])
//! or written as its images come ([`Stream`]), byte for byte the same document.

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

/// The JSON document written as its images come: the same bytes as [`json_with`] (with a
/// final newline), but each image is written out as its turn comes and none is kept. Nothing
/// is written before the first image: a run stopped before it leaves no document.
#[derive(Debug, Default)]
pub(super) struct Stream {
    /// Images written so far.
    images: usize,
}

impl Stream {
    /// The text that puts `report` next in the document (its opening, for the first).
    pub(super) fn image(&mut self, report: &ImageReport) -> String {
        let head = match self.images {
            0 => "{\n  \"images\": [\n    ",
            _ => ",\n    ",
        };
        self.images += 1;
        head.to_string() + &nested(report, 2)
    }

    /// The rest of the document: the end of `images`, then `notes`, `placements` and
    /// `runtimes` (each left out when empty), as [`json_with`] writes them.
    pub(super) fn end(&self, extras: &RunExtras) -> String {
        let mut out = self.close();
        member(&mut out, "notes", &extras.notes);
        member(&mut out, "placements", &extras.placements);
        member(&mut out, "runtimes", &extras.runtimes);
        out + "\n}\n"
    }

    /// The rest of a document whose run stopped (`why`) after some images: the end of
    /// `images`, the run's `notes`, and `stopped`; nothing when no image was written (there
    /// is no document to close).
    pub(super) fn stop(&self, notes: &[String], why: &str) -> String {
        if self.images == 0 {
            return String::new();
        }
        let mut out = self.close();
        member(&mut out, "notes", notes);
        member(&mut out, "stopped", &why);
        out + "\n}\n"
    }

    /// The end of the `images` array (the whole member when no image was written).
    fn close(&self) -> String {
        match self.images {
            0 => "{\n  \"images\": []".to_string(),
            _ => "\n  ]".to_string(),
        }
    }
}

/// `,\n  "NAME": VALUE`, pretty-printed at the document's first level; nothing for an empty
/// list.
fn member<T: Serialize + ?Sized>(out: &mut String, name: &str, value: &T) {
    let text = nested(value, 1);
    if text != "[]" {
        out.push_str(&format!(",\n  \"{name}\": {text}"));
    }
}

/// `value` pretty-printed as it is `depth` levels down a pretty-printed document: every line
/// after the first indented two spaces per level (a JSON string holds no raw newline, so
/// every newline is the printer's).
fn nested<T: Serialize + ?Sized>(value: &T, depth: usize) -> String {
    let text = serde_json::to_string_pretty(value).expect("reports serialise");
    text.replace('\n', &format!("\n{}", "  ".repeat(depth)))
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
