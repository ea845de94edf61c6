//! Renders what the library found for people and machines: the verify matrix as text
//! ([`text`]), JSON (schema in docs/json-schema.md, [`json`]), a Konflux `TEST_OUTPUT` object
//! ([`konflux`]), the `inspect` view ([`inspect_text`], [`inspect_json`]) and `resolve`'s
//! document ([`resolve_json`], [`resolve_rows_json`]), `mirror-check --plan`'s pull plans
//! ([`plans_json`], [`plans_text`]). Text shows every input-derived string through [`escape`].

use std::time::SystemTime;

use crate::engine::{ImageReport, Verdict};

pub mod build;
mod escape;
mod inspect;
mod json;
mod konflux;
mod labels;
mod placement;
mod plans;
mod resolve;
mod text;

pub use escape::escape;
pub use inspect::{inspect_json, inspect_text};
pub use json::{json, json_with};
pub use konflux::{TestOutput, konflux, konflux_with};
pub use placement::{NodePlacement, RunExtras};
pub use plans::{plans_json, plans_text};
pub use resolve::{resolve_json, resolve_rows_json};
pub use text::{text, text_with};

/// Output formats of `verify` and `mirror-check`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Human-readable matrix and findings.
    Text,
    /// One JSON document.
    Json,
    /// Konflux TEST_OUTPUT (ADR 0030).
    Konflux,
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
    format: Format,
    reports: &[ImageReport],
    extras: &RunExtras,
    now: SystemTime,
) -> String {
    match format {
        Format::Text => text_with(reports, extras),
        Format::Json => json_with(reports, extras) + "\n",
        Format::Konflux => {
            let out = konflux_with(reports, &extras.notes, now);
            serde_json::to_string(&out).expect("serialises") + "\n"
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::engine::{Finding, HostResult, HostStatus, Severity, Verdict};

    /// A report with one host row and one finding per severity.
    pub(crate) fn report(verdict: Verdict, severities: &[Severity]) -> ImageReport {
        ImageReport {
            reference: format!("r-{verdict:?}"),
            origins: vec![],
            binaries: vec![],
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

    #[test]
    fn render_ends_each_document_with_a_newline() {
        let reports = [report(Verdict::Pass, &[])];
        let now = std::time::UNIX_EPOCH;
        let none = RunExtras::default();
        assert_eq!(render(Format::Text, &reports, &none, now), text(&reports));
        assert_eq!(
            render(Format::Json, &reports, &none, now),
            json(&reports) + "\n"
        );
        let konflux = render(Format::Konflux, &reports, &none, now);
        assert!(konflux.starts_with("{\"result\":\"SUCCESS\""), "{konflux}");
        assert!(konflux.ends_with("}\n"), "{konflux}");
    }
}
