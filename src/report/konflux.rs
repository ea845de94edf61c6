//! The Konflux `TEST_OUTPUT` result (konflux-ci/architecture ADR 0030; docs/konflux.md).

use std::fmt::Write as _;

use serde::Serialize;

use crate::engine::{ImageReport, Severity, Verdict};

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
    let count = |keep: &dyn Fn(&ImageReport) -> bool| reports.iter().filter(|r| keep(r)).count();
    let fails = count(&|r| r.verdict == Verdict::Fail);
    let errors = count(&|r| r.verdict == Verdict::Error);
    let warned = count(&|r| r.verdict == Verdict::Pass && r.count(Severity::Warning) > 0);
    let passes = count(&|r| r.verdict == Verdict::Pass);
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
        let _ = write!(
            note,
            "; {}: {}",
            r.reference,
            super::error_rules(r).join(",")
        );
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::tests::report;

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
}
