//! Renders image reports as text, JSON (schema in docs/json-schema.md) or a Konflux
//! `TEST_OUTPUT` object, and maps verdicts to exit codes.

pub mod build;

use std::fmt::Write as _;

use serde::Serialize;

use crate::engine::{ImageReport, Severity, Verdict};

/// Exit code: every image passes.
pub const EXIT_PASS: i32 = 0;
/// Exit code: at least one image fails its policy.
pub const EXIT_FAIL: i32 = 1;
/// Exit code: usage error or bad input.
pub const EXIT_USAGE: i32 = 2;
/// Exit code: a check could not be completed.
pub const EXIT_ERROR: i32 = 3;

/// Output formats of `verify`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Human-readable matrix and findings.
    Text,
    /// One JSON document.
    Json,
    /// Konflux TEST_OUTPUT (ADR 0030).
    Konflux,
}

/// The exit code for a set of reports: 1 if any image fails, else 3 if any could not be
/// checked, else 0.
pub fn exit_code(reports: &[ImageReport]) -> i32 {
    if reports.iter().any(|r| r.verdict == Verdict::Fail) {
        EXIT_FAIL
    } else if reports.iter().any(|r| r.verdict == Verdict::Error) {
        EXIT_ERROR
    } else {
        EXIT_PASS
    }
}

#[derive(Serialize)]
struct JsonDoc<'a> {
    images: &'a [ImageReport],
}

/// The JSON document `{"images":[…]}`.
pub fn json(reports: &[ImageReport]) -> String {
    serde_json::to_string_pretty(&JsonDoc { images: reports }).expect("reports serialise")
}

/// The Konflux TEST_OUTPUT result (konflux-ci/architecture ADR 0030).
#[derive(Debug, Serialize, serde::Deserialize, PartialEq, Eq)]
pub struct TestOutput {
    /// SUCCESS, FAILURE, WARNING, SKIPPED or ERROR.
    pub result: String,
    /// RFC 3339 time of the check.
    pub timestamp: String,
    /// Human summary.
    pub note: String,
    /// Namespace of the check.
    pub namespace: String,
    /// Images that passed.
    pub successes: usize,
    /// Images that failed or could not be checked.
    pub failures: usize,
    /// Images that passed with warnings.
    pub warnings: usize,
}

/// Builds the Konflux result: FAILURE when any image fails, ERROR when a check could not
/// run, WARNING when only warnings, SUCCESS otherwise.
pub fn konflux(reports: &[ImageReport], now: std::time::SystemTime) -> TestOutput {
    let fails = reports
        .iter()
        .filter(|r| r.verdict == Verdict::Fail)
        .count();
    let errors = reports
        .iter()
        .filter(|r| r.verdict == Verdict::Error)
        .count();
    let warned = reports
        .iter()
        .filter(|r| r.verdict == Verdict::Pass && r.count(Severity::Warning) > 0)
        .count();
    let passes = reports
        .iter()
        .filter(|r| r.verdict == Verdict::Pass)
        .count();
    let result = if fails > 0 {
        "FAILURE"
    } else if errors > 0 {
        "ERROR"
    } else if warned > 0 {
        "WARNING"
    } else {
        "SUCCESS"
    };
    let mut note = format!(
        "imgcheck: {} image(s): {passes} passed ({warned} with warnings), {fails} failed, {errors} could not be checked",
        reports.len()
    );
    for r in reports.iter().filter(|r| r.verdict != Verdict::Pass) {
        let rules: Vec<&str> = r
            .findings
            .iter()
            .filter(|f| f.severity == Severity::Error)
            .map(|f| f.rule.id())
            .collect();
        let mut uniq = rules.clone();
        uniq.dedup();
        let _ = write!(note, "; {}: {}", r.reference, uniq.join(","));
    }
    TestOutput {
        result: result.to_string(),
        timestamp: humantime::format_rfc3339_seconds(now).to_string(),
        note,
        namespace: "default".to_string(),
        successes: passes,
        failures: fails + errors,
        warnings: warned,
    }
}

fn short(d: &str) -> String {
    match d.split_once(':') {
        Some((alg, hex)) if hex.len() > 12 => format!("{alg}:{}", &hex[..12]),
        _ => d.to_string(),
    }
}

/// The text report: per image a verdict line, the host matrix, and the findings.
pub fn text(reports: &[ImageReport]) -> String {
    let mut out = String::new();
    for r in reports {
        let verdict = match r.verdict {
            Verdict::Pass => "PASS",
            Verdict::Fail => "FAIL",
            Verdict::Error => "ERROR",
        };
        let _ = writeln!(
            out,
            "{verdict}  {}  {}",
            r.reference,
            r.digest.as_deref().map(short).unwrap_or_default()
        );
        if !r.hosts.is_empty() {
            // Collapse runtimes that agree for a host into one row.
            let mut rows: Vec<(String, String, String, String, String)> = Vec::new();
            let mut i = 0;
            while i < r.hosts.len() {
                let h = &r.hosts[i];
                let same: Vec<_> = r.hosts[i..]
                    .iter()
                    .take_while(|o| o.platform == h.platform)
                    .collect();
                let all_agree = same
                    .iter()
                    .all(|o| o.selected == h.selected && o.status == h.status);
                let group: Vec<_> = if all_agree { vec![h] } else { same.clone() };
                for o in group {
                    let runtime = match (all_agree, o.runtime) {
                        (_, None) => "-".to_string(),
                        (true, Some(_)) if same.len() > 1 => "all".to_string(),
                        (_, Some(p)) => p.name().to_string(),
                    };
                    rows.push((
                        o.platform.clone(),
                        runtime,
                        o.selected
                            .as_deref()
                            .map(short)
                            .unwrap_or_else(|| "(none)".into()),
                        o.os_version.clone().unwrap_or_else(|| "-".into()),
                        o.status.clone(),
                    ));
                }
                i += same.len();
            }
            let _ = writeln!(
                out,
                "  {:<26} {:<16} {:<20} {:<17} status",
                "host", "runtime", "selects", "os.version"
            );
            for (p, rt, sel, v, st) in rows {
                let _ = writeln!(out, "  {p:<26} {rt:<16} {sel:<20} {v:<17} {st}");
            }
        }
        for f in &r.findings {
            let sev = match f.severity {
                Severity::Error => "error",
                Severity::Warning => "warning",
                Severity::Info => "info",
            };
            let _ = writeln!(out, "  {sev:<7} {:<21} {}", f.rule, f.message);
            if f.severity != Severity::Info {
                let _ = writeln!(out, "          hint: {}", f.hint);
            }
        }
    }
    if reports.len() > 1 {
        // Summary: failing images first, then those that could not be checked, then passes.
        let _ = writeln!(out, "\nsummary:");
        let mut order: Vec<&ImageReport> = reports.iter().collect();
        order.sort_by_key(|r| match r.verdict {
            Verdict::Fail => 0,
            Verdict::Error => 1,
            Verdict::Pass => 2,
        });
        for r in order {
            let mut rules: Vec<&str> = r
                .findings
                .iter()
                .filter(|f| f.severity == Severity::Error)
                .map(|f| f.rule.id())
                .collect();
            rules.dedup();
            let verdict = match r.verdict {
                Verdict::Pass => "PASS",
                Verdict::Fail => "FAIL",
                Verdict::Error => "ERROR",
            };
            let line = format!("  {verdict:<5} {}  {}", r.reference, rules.join(","));
            let _ = writeln!(out, "{}", line.trim_end());
        }
        let count = |v| reports.iter().filter(|r| r.verdict == v).count();
        let _ = writeln!(
            out,
            "{} images: {} pass, {} fail, {} error",
            reports.len(),
            count(Verdict::Pass),
            count(Verdict::Fail),
            count(Verdict::Error)
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{Finding, HostResult};

    fn report(verdict: Verdict, severities: &[Severity]) -> ImageReport {
        ImageReport {
            reference: format!("r-{verdict:?}"),
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
                selected: None,
                os_version: None,
                status: "no-match".into(),
            }],
        }
    }

    #[test]
    fn exit_code_precedence() {
        let p = report(Verdict::Pass, &[]);
        let f = report(Verdict::Fail, &[Severity::Error]);
        let e = report(Verdict::Error, &[Severity::Error]);
        assert_eq!(exit_code(&[]), EXIT_PASS);
        assert_eq!(exit_code(std::slice::from_ref(&p)), EXIT_PASS);
        assert_eq!(exit_code(&[p.clone(), e.clone()]), EXIT_ERROR);
        assert_eq!(exit_code(&[e, f, p]), EXIT_FAIL);
    }

    #[test]
    fn konflux_results() {
        let now = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_796_216_661);
        let cases = [
            (vec![report(Verdict::Pass, &[])], "SUCCESS", (1, 0, 0)),
            (
                vec![report(Verdict::Pass, &[Severity::Warning])],
                "WARNING",
                (1, 0, 1),
            ),
            (
                vec![
                    report(Verdict::Pass, &[]),
                    report(Verdict::Error, &[Severity::Error]),
                ],
                "ERROR",
                (1, 1, 0),
            ),
            (
                vec![
                    report(Verdict::Error, &[Severity::Error]),
                    report(Verdict::Fail, &[Severity::Error]),
                ],
                "FAILURE",
                (0, 2, 0),
            ),
        ];
        for (reports, want, (s, f, w)) in cases {
            let out = konflux(&reports, now);
            assert_eq!(out.result, want);
            assert_eq!((out.successes, out.failures, out.warnings), (s, f, w));
            assert_eq!(out.timestamp, "2026-12-02T13:04:21Z");
            assert_eq!(out.namespace, "default");
        }
    }

    #[test]
    fn text_shows_verdict_matrix_and_findings() {
        let out = text(&[
            report(Verdict::Fail, &[Severity::Error]),
            report(Verdict::Pass, &[]),
        ]);
        assert!(out.contains("FAIL  r-Fail  sha256:0123456789ab"), "{out}");
        assert!(out.contains("linux/amd64"), "{out}");
        assert!(out.contains("error   no-match"), "{out}");
        assert!(out.contains("hint: h"), "{out}");
        assert!(out.contains("2 images: 1 pass, 1 fail, 0 error"), "{out}");
        let doc: serde_json::Value =
            serde_json::from_str(&json(&[report(Verdict::Pass, &[])])).unwrap();
        assert_eq!(doc["images"][0]["verdict"], "pass");
        assert_eq!(
            doc["images"][0]["hosts"][0]["selected"],
            serde_json::Value::Null
        );
    }
}
