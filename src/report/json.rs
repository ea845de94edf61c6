//! The JSON document `{"images":[…]}` (schema in docs/json-schema.md), whole ([`json_with`])
//! or written as its images come ([`Stream`]), byte for byte the same document.

use serde::Serialize;
use serde_json::ser::{Formatter, PrettyFormatter};

use crate::cluster::nodes::NodeRuntime;
use crate::cluster::upgrade::UpgradeReport;
use crate::engine::ImageReport;
use crate::engine::{NodePlacement, RunExtras};

#[derive(Serialize)]
struct JsonDoc<'a> {
    images: &'a [ImageReport],
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    notes: &'a [String],
    #[serde(skip_serializing_if = "<[NodePlacement]>::is_empty")]
    placements: &'a [NodePlacement],
    #[serde(skip_serializing_if = "<[NodeRuntime]>::is_empty")]
    runtimes: &'a [NodeRuntime],
    #[serde(skip_serializing_if = "Option::is_none")]
    upgrade: Option<&'a UpgradeReport>,
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
        upgrade: extras.upgrade.as_ref(),
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
    /// Appends to `out` the text that puts `report` next in the document (its opening, for
    /// the first).
    pub(super) fn image(&mut self, report: &ImageReport, out: &mut Vec<u8>) {
        let head = match self.images {
            0 => "{\n  \"images\": [\n    ",
            _ => ",\n    ",
        };
        self.images += 1;
        out.extend_from_slice(head.as_bytes());
        write_nested(out, report, 2);
    }

    /// The rest of the document: the end of `images`, then `notes`, `placements` and
    /// `runtimes` (each left out when empty), as [`json_with`] writes them.
    pub(super) fn end(&self, extras: &RunExtras) -> String {
        let mut out = self.close();
        member(&mut out, "notes", &extras.notes);
        member(&mut out, "placements", &extras.placements);
        member(&mut out, "runtimes", &extras.runtimes);
        if let Some(upgrade) = &extras.upgrade {
            member(&mut out, "upgrade", upgrade);
        }
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
    let mut text = Vec::new();
    write_nested(&mut text, value, 1);
    if text != b"[]" {
        out.push_str(",\n  \"");
        out.push_str(name);
        out.push_str("\": ");
        out.push_str(std::str::from_utf8(&text).expect("JSON is UTF-8"));
    }
}

/// Appends `value` to `out` pretty-printed as it is `depth` levels down a pretty-printed
/// document: every line after the first indented two spaces per level. serde_json's own
/// pretty printer does it, started `depth` levels in, so the text is written once and never
/// scanned again.
fn write_nested<T: Serialize + ?Sized>(out: &mut Vec<u8>, value: &T, depth: usize) {
    let mut pretty = PrettyFormatter::new();
    for _ in 0..depth {
        // Each opening of a level (written nowhere) indents what follows one step more.
        pretty
            .begin_object(&mut std::io::sink())
            .expect("a sink takes every write");
    }
    let mut serializer = serde_json::Serializer::with_formatter(out, pretty);
    value.serialize(&mut serializer).expect("reports serialise");
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
