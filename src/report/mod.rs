//! Renders what the library found for people and machines: the verify matrix as text
//! ([`text`]), JSON (schema in docs/json-schema.md, [`json`]), a Konflux `TEST_OUTPUT` object
//! ([`konflux`]), the `inspect` view ([`inspect_text`], [`inspect_json`]) and `resolve`'s
//! document ([`resolve_json`], [`resolve_rows_json`]). Exit codes come from [`crate::exit`].

use std::time::SystemTime;

use crate::engine::{ImageReport, Severity};
use crate::exit::ExitKind;

pub mod build;
mod inspect;
mod json;
mod konflux;
mod resolve;
mod text;

pub use inspect::{inspect_json, inspect_text};
pub use json::json;
pub use konflux::{TestOutput, konflux};
pub use resolve::{resolve_json, resolve_rows_json};
pub use text::text;

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

/// The exit kind of a set of reports: `Fail` if any image fails, else `Incomplete` if any
/// could not be checked, else `Pass` (see [`ExitKind::of_verdicts`]).
pub fn exit_kind(reports: &[ImageReport]) -> ExitKind {
    ExitKind::of_verdicts(reports.iter().map(|r| r.verdict))
}

/// Everything `verify` and `mirror-check` print on standard output for `reports` in `format`;
/// `now` stamps the Konflux result.
pub fn render(format: Format, reports: &[ImageReport], now: SystemTime) -> String {
    match format {
        Format::Text => text(reports),
        Format::Json => json(reports) + "\n",
        Format::Konflux => {
            serde_json::to_string(&konflux(reports, now)).expect("serialises") + "\n"
        }
    }
}

/// An error and its causes on one line, joined with `": "`: for report fields and messages
/// that hold text (a finding's message), where the CLI's `caused by:` lines cannot go.
pub fn one_line(error: &dyn std::error::Error) -> String {
    let mut line = error.to_string();
    let mut cause = error.source();
    while let Some(c) = cause {
        line = format!("{line}: {c}");
        cause = c.source();
    }
    line
}

/// The rules of a report's error findings, consecutive repeats dropped (summaries and notes).
fn error_rules(report: &ImageReport) -> Vec<String> {
    let mut rules: Vec<String> = report
        .findings
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .map(|f| f.rule.to_string())
        .collect();
    rules.dedup();
    rules
}

/// A digest cut to its algorithm and twelve hex digits, for tables.
fn short(d: &str) -> String {
    match d.split_once(':') {
        Some((alg, hex)) if hex.len() > 12 => format!("{alg}:{}", &hex[..12]),
        _ => d.to_string(),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::engine::{Finding, HostResult, HostStatus, Verdict};

    /// A report with one host row and one finding per severity.
    pub(crate) fn report(verdict: Verdict, severities: &[Severity]) -> ImageReport {
        ImageReport {
            reference: format!("r-{verdict:?}"),
            origins: vec![],
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
    fn exit_code_precedence() {
        let p = report(Verdict::Pass, &[]);
        let f = report(Verdict::Fail, &[Severity::Error]);
        let e = report(Verdict::Error, &[Severity::Error]);
        assert_eq!(exit_kind(&[]), ExitKind::Pass);
        assert_eq!(exit_kind(std::slice::from_ref(&p)), ExitKind::Pass);
        assert_eq!(exit_kind(&[p.clone(), e.clone()]), ExitKind::Incomplete);
        assert_eq!(exit_kind(&[e, f, p]), ExitKind::Fail);
    }

    #[test]
    fn one_line_joins_the_causes() {
        let io = std::io::Error::other("disk on fire");
        let list = crate::batch::ListError {
            origin: "refs.txt".into(),
            reason: "cannot read".into(),
            source: Some(crate::batch::ListCause::Read(std::sync::Arc::new(io))),
        };
        assert_eq!(one_line(&list), "refs.txt: cannot read: disk on fire");
    }

    #[test]
    fn render_ends_each_document_with_a_newline() {
        let reports = [report(Verdict::Pass, &[])];
        let now = std::time::UNIX_EPOCH;
        assert_eq!(render(Format::Text, &reports, now), text(&reports));
        assert_eq!(render(Format::Json, &reports, now), json(&reports) + "\n");
        let konflux = render(Format::Konflux, &reports, now);
        assert!(konflux.starts_with("{\"result\":\"SUCCESS\""), "{konflux}");
        assert!(konflux.ends_with("}\n"), "{konflux}");
    }
}
