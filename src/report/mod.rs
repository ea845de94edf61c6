//! Renders what the library found for people and machines: the verify matrix as text
//! ([`text`]), JSON (schema in docs/json-schema.md, [`json`]), a Konflux `TEST_OUTPUT` object
//! ([`konflux`]), the `inspect` view ([`inspect_text`], [`inspect_json`]) and `resolve`'s
//! document ([`resolve_json`], [`resolve_rows_json`]), `mirror-check --plan`'s pull plans
//! ([`plans_json`], [`plans_text`]). Text shows every input-derived string through
//! [`crate::escape::escape`].
//! [`Writer`] writes the verify report as its images come, in every format, keeping none of
//! them: the same bytes as [`render`].

use std::io::Write;
use std::time::SystemTime;

use crate::engine::{ImageReport, RunExtras, Verdict};

pub mod build;
mod inspect;
mod json;
mod junit;
mod konflux;
mod labels;
mod plans;
mod resolve;
mod text;

pub use inspect::{inspect_json, inspect_text};
pub use json::{json, json_with};
pub use junit::junit_with;
pub use konflux::{TestOutput, konflux, konflux_with};
pub use plans::{plans_json, plans_text};
pub use resolve::{resolve_json, resolve_rows_json};
pub use text::{text, text_with};

/// Output formats of `verify` and `mirror-check`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputFormat {
    /// Human-readable matrix and findings.
    Text,
    /// One JSON document.
    Json,
    /// Konflux TEST_OUTPUT (ADR 0030).
    Konflux,
    /// JUnit XML: a testsuite per image, a testcase per host row and per rule.
    Junit,
}

/// The verdict of a set of reports: `Fail` if any image fails (retrying cannot fix it), else
/// `Error` if any could not be checked, else `Pass`.
pub fn overall(reports: &[ImageReport]) -> Verdict {
    // `Verdict` orders Pass < Error < Fail.
    reports
        .iter()
        .map(|r| r.verdict)
        .max()
        .unwrap_or(Verdict::Pass)
}

/// Everything `verify` and `mirror-check` print on standard output for `reports` in `format`;
/// `now` stamps the Konflux result.
/// `extras` adds the run's notes and per-node answer: JSON `notes` and `placements`, the
/// Konflux note's `; note: …` parts, the text report's failing placements (its notes are on
/// standard error).
pub fn render(
    format: OutputFormat,
    reports: &[ImageReport],
    extras: &RunExtras,
    now: SystemTime,
) -> String {
    match format {
        OutputFormat::Text => text_with(reports, extras),
        OutputFormat::Json => json_with(reports, extras) + "\n",
        OutputFormat::Konflux => {
            let out = konflux_with(reports, &extras.notes, now);
            serde_json::to_string(&out).expect("serialises") + "\n"
        }
        OutputFormat::Junit => junit_with(reports, extras),
    }
}

/// The report of `verify` and `mirror-check` written as its images come, in input order:
/// the same bytes as [`render`] of them all, but each image's part is written (and flushed)
/// as soon as it is given, and nothing of it is kept beyond what the end needs — the text
/// summary's line, the Konflux counts and the note's part of an image that fails or could
/// not be checked. Text: each image's block at once, the summary and the failing placements
/// at the end; JSON: one document, each image as it comes, then `notes` and `placements`;
/// Konflux: one object at the end; JUnit: the head with the first image, a suite per image,
/// the placements and the end at the end.
pub struct Writer<W: Write> {
    out: W,
    body: Body,
    /// The part being written, kept between images so that its room is reused.
    part: Vec<u8>,
}

/// What a [`Writer`] keeps, per format.
enum Body {
    Text(text::Summary),
    Json(json::Stream),
    Konflux(konflux::Tally),
    Junit(junit::Stream),
}

impl<W: Write> Writer<W> {
    /// A report in `format` written to `out`; nothing is written yet.
    pub fn new(format: OutputFormat, out: W) -> Writer<W> {
        let body = match format {
            OutputFormat::Text => Body::Text(text::Summary::default()),
            OutputFormat::Json => Body::Json(json::Stream::default()),
            OutputFormat::Konflux => Body::Konflux(konflux::Tally::default()),
            OutputFormat::Junit => Body::Junit(junit::Stream::default()),
        };
        Writer {
            out,
            body,
            part: Vec::new(),
        }
    }

    /// Writes the next image's part (Konflux: only counts it) and flushes.
    pub fn image(&mut self, report: &ImageReport) -> std::io::Result<()> {
        self.part.clear();
        match &mut self.body {
            Body::Text(summary) => {
                summary.add(report);
                let mut block = String::new();
                text::block(&mut block, report);
                self.out.write_all(block.as_bytes())?;
                return self.out.flush();
            }
            Body::Json(stream) => stream.image(report, &mut self.part),
            Body::Konflux(tally) => {
                tally.add(report);
                return Ok(());
            }
            Body::Junit(stream) => {
                let mut suite = String::new();
                stream.image(report, &mut suite);
                self.part.extend_from_slice(suite.as_bytes());
            }
        }
        self.out.write_all(&self.part)?;
        self.out.flush()
    }

    /// Writes the end of the report — the text summary and failing placements, the JSON
    /// `notes` and `placements`, the Konflux result stamped `now` — and returns the output.
    pub fn finish(mut self, extras: &RunExtras, now: SystemTime) -> std::io::Result<W> {
        let end = match &mut self.body {
            Body::Text(summary) => {
                let mut end = String::new();
                summary.write(&mut end);
                text::extras_lines(&mut end, extras);
                end
            }
            Body::Json(stream) => stream.end(extras),
            Body::Konflux(tally) => {
                let out = tally.result(&extras.notes, now);
                serde_json::to_string(&out).expect("serialises") + "\n"
            }
            Body::Junit(stream) => stream.end(extras),
        };
        self.out.write_all(end.as_bytes())?;
        self.out.flush()?;
        Ok(self.out)
    }

    /// Ends a report whose run stopped before all its images (bad input, `why`): text keeps
    /// the blocks written, without a summary; a JSON document that was begun is closed with
    /// the run's `notes` and `stopped`, a JUnit one with a suite whose error says why
    /// (nothing was written before the first image: nothing is); Konflux writes nothing.
    /// Returns the output.
    pub fn stop(mut self, notes: &[String], why: &str) -> std::io::Result<W> {
        let end = match &self.body {
            Body::Json(stream) => stream.stop(notes, why),
            Body::Junit(stream) => stream.stop(why),
            Body::Text(_) | Body::Konflux(_) => String::new(),
        };
        if !end.is_empty() {
            self.out.write_all(end.as_bytes())?;
            self.out.flush()?;
        }
        Ok(self.out)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::cluster::nodes::NodeRuntime;
    use crate::engine::NodePlacement;
    use crate::engine::{Finding, HostResult, HostStatus, Severity, Verdict};

    /// A report with one host row and one finding per severity.
    pub(crate) fn report(verdict: Verdict, severities: &[Severity]) -> ImageReport {
        ImageReport {
            reference: format!("r-{verdict:?}"),
            origins: vec![],
            binaries: vec![],
            signatures: vec![],
            sources: vec![],
            admissions: vec![],
            digest: Some("sha256:0123456789abcdef".into()),
            verdict,
            findings: severities
                .iter()
                .map(|s| Finding {
                    rule: crate::engine::Rule::NoMatch,
                    severity: *s,
                    message: "m".into(),
                    hint: "h",
                    digest: None,
                    host: None,
                    nodes: None,
                })
                .collect(),
            hosts: vec![HostResult {
                platform: "linux/amd64".into(),
                runtime: None,
                isolation: None,
                selected: None,
                os_version: None,
                status: HostStatus::Fails(crate::engine::Rule::NoMatch),
                nodes: vec![],
            }],
        }
    }

    #[test]
    fn verdict_precedence() {
        let p = report(Verdict::Pass, &[]);
        let f = report(Verdict::Fail, &[Severity::Error]);
        let e = report(Verdict::Error, &[Severity::Error]);
        assert_eq!(overall(&[]), Verdict::Pass);
        assert_eq!(overall(std::slice::from_ref(&p)), Verdict::Pass);
        assert_eq!(overall(&[p.clone(), e.clone()]), Verdict::Error);
        assert_eq!(overall(&[e, f, p]), Verdict::Fail);
    }

    /// A report of `verdict` named `reference`, with `hosts` host rows and a finding per
    /// severity in `severities`.
    fn varied(reference: String, verdict: u8, severities: u8, hosts: usize) -> ImageReport {
        let verdict = [Verdict::Pass, Verdict::Fail, Verdict::Error][usize::from(verdict % 3)];
        let all = [Severity::Error, Severity::Warning, Severity::Info];
        let picked: Vec<Severity> = (0..3)
            .filter(|i| severities & (1 << i) != 0)
            .map(|i| all[i])
            .collect();
        let mut r = report(verdict, &picked);
        r.reference = reference;
        let row = r.hosts[0].clone();
        r.hosts = vec![row; hosts];
        r
    }

    fn placement(node: String, ok: bool) -> NodePlacement {
        NodePlacement {
            node,
            kind: "DaemonSet".into(),
            namespace: Some("ns".into()),
            name: "csi".into(),
            container: "c".into(),
            init: false,
            image: "q.io/a:v1".into(),
            platform: Some("windows/amd64:10.0.17763".into()),
            runtime: None,
            runtime_version: Some("containerd://1.7.27".into()),
            runtime_reason: Some("a \"quoted\"\nreason".into()),
            selected: None,
            status: match ok {
                true => HostStatus::Ok,
                false => HostStatus::Fails(crate::engine::Rule::NoMatch),
            },
        }
    }

    /// The report written image by image.
    fn streamed(format: OutputFormat, reports: &[ImageReport], extras: &RunExtras) -> String {
        let mut w = Writer::new(format, Vec::new());
        for r in reports {
            w.image(r).unwrap();
        }
        let out = w.finish(extras, std::time::UNIX_EPOCH).unwrap();
        String::from_utf8(out).unwrap()
    }

    proptest::proptest! {
        /// Issue 24: the report written image by image is, byte for byte, the document made
        /// of them all at once (`serde_json` of the whole document for JSON), in every format,
        /// whatever the references, notes and placements hold (quotes, newlines, controls).
        #[test]
        fn the_streamed_report_is_the_whole_document(
            images in proptest::collection::vec(
                (".{0,12}", 0u8..3, 0u8..8, 0usize..3), 0..6),
            notes in proptest::collection::vec(".{0,10}", 0..3),
            placements in proptest::collection::vec((".{0,8}", proptest::bool::ANY), 0..3),
            runtimes in proptest::collection::vec((".{0,8}", ".{0,8}"), 0..3),
        ) {
            let reports: Vec<ImageReport> = images
                .into_iter()
                .map(|(r, v, s, h)| varied(r, v, s, h))
                .collect();
            let extras = RunExtras {
                notes,
                placements: placements.into_iter().map(|(n, ok)| placement(n, ok)).collect(),
                runtimes: runtimes.into_iter().map(|(v, why)| runtime(v, why)).collect(),
                upgrade: None,
            };
            use OutputFormat::{Json, Junit, Konflux, Text};
            for format in [Text, Json, Konflux, Junit] {
                let whole = render(format, &reports, &extras, std::time::UNIX_EPOCH);
                proptest::prop_assert_eq!(streamed(format, &reports, &extras), whole);
            }
            let doc = JsonDoc {
                images: &reports,
                notes: &extras.notes,
                placements: &extras.placements,
                runtimes: &extras.runtimes,
            };
            let whole = serde_json::to_string_pretty(&doc).unwrap() + "\n";
            proptest::prop_assert_eq!(streamed(OutputFormat::Json, &reports, &extras), whole);
        }
    }

    /// The whole JSON document, as `serde_json` writes it.
    #[derive(serde::Serialize)]
    struct JsonDoc<'a> {
        images: &'a [ImageReport],
        #[serde(skip_serializing_if = "<[String]>::is_empty")]
        notes: &'a [String],
        #[serde(skip_serializing_if = "<[NodePlacement]>::is_empty")]
        placements: &'a [NodePlacement],
        #[serde(skip_serializing_if = "<[NodeRuntime]>::is_empty")]
        runtimes: &'a [NodeRuntime],
    }

    /// A node runtime as reported (`version`), judged as containerd 1.7 for `reason`.
    fn runtime(version: String, reason: String) -> NodeRuntime {
        NodeRuntime {
            version,
            profile: crate::platform::RuntimeProfile::CONTAINERD_1_7,
            reason,
            nodes: vec!["n1".into()],
        }
    }

    /// Issue 24: a run stopped by bad input after some images leaves a JSON document that
    /// parses, holds those images and says why it stopped; stopped before any image it
    /// leaves nothing (in no format); text keeps the blocks without a summary.
    #[test]
    fn a_stopped_report_is_closed_or_empty() {
        let reports = [report(Verdict::Pass, &[]), report(Verdict::Fail, &[])];
        let notes = ["a note".to_string()];
        let why = "oci:x: not an OCI layout";
        for format in [
            OutputFormat::Text,
            OutputFormat::Json,
            OutputFormat::Konflux,
            OutputFormat::Junit,
        ] {
            let untouched = Writer::new(format, Vec::new()).stop(&notes, why).unwrap();
            assert!(untouched.is_empty(), "{format:?}");
        }
        let mut w = Writer::new(OutputFormat::Json, Vec::new());
        reports.iter().for_each(|r| w.image(r).unwrap());
        let out = w.stop(&notes, why).unwrap();
        let doc: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(doc["images"].as_array().unwrap().len(), 2);
        assert_eq!(doc["stopped"], why);
        assert_eq!(doc["notes"][0], "a note");
        let mut w = Writer::new(OutputFormat::Text, Vec::new());
        reports.iter().for_each(|r| w.image(r).unwrap());
        let out = String::from_utf8(w.stop(&notes, why).unwrap()).unwrap();
        assert_eq!(out, text(&reports[..1]) + &text(&reports[1..]));
        assert!(!out.contains("summary"), "{out}");
    }

    #[test]
    fn render_ends_each_document_with_a_newline() {
        let reports = [report(Verdict::Pass, &[])];
        let now = std::time::UNIX_EPOCH;
        let none = RunExtras::default();
        assert_eq!(
            render(OutputFormat::Text, &reports, &none, now),
            text(&reports)
        );
        assert_eq!(
            render(OutputFormat::Json, &reports, &none, now),
            json(&reports) + "\n"
        );
        let konflux = render(OutputFormat::Konflux, &reports, &none, now);
        assert!(konflux.starts_with("{\"result\":\"SUCCESS\""), "{konflux}");
        assert!(konflux.ends_with("}\n"), "{konflux}");
    }
}
