//! The Konflux `TEST_OUTPUT` result (konflux-ci/architecture ADR 0030; docs/konflux.md).

use std::fmt::Write as _;

use serde::Serialize;

use super::labels::rules_on_hosts;
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
    /// Images that passed without warnings.
    pub successes: usize,
    /// Images that failed their policy.
    pub failures: usize,
    /// Images that passed with warnings.
    pub warnings: usize,
}

/// Builds the Konflux result. Each image is one check; the result is the highest of the
/// images' results in ADR 0030's rank order (`ERROR`, `FAILURE`, `WARNING`, `SKIPPED`,
/// `SUCCESS`), and the counts are disjoint: an image that could not be checked is in none of
/// them (the ADR has no count for it), only in the note.
pub fn konflux(reports: &[ImageReport], now: std::time::SystemTime) -> TestOutput {
    konflux_with(reports, &[], now)
}

/// [`konflux`] whose note also carries the run's notes (`; note: …`), after the images.
pub fn konflux_with(
    reports: &[ImageReport],
    notes: &[String],
    now: std::time::SystemTime,
) -> TestOutput {
    let mut tally = Tally::default();
    reports.iter().for_each(|r| tally.add(r));
    tally.result(notes, now)
}

/// The Konflux result kept as its images pass by: the counts, and the note's part for each
/// image that could not be checked, failed or passed with warnings (its reference, rules and
/// the hosts they concern); nothing of the others.
#[derive(Debug, Default)]
pub(super) struct Tally {
    images: usize,
    errors: usize,
    fails: usize,
    warnings: usize,
    /// `; REF: RULES` of each image that could not be checked, then of each failing one,
    /// then `; REF: warning RULES` of each that passed with warnings.
    behind: [String; 3],
}

/// The longest note, in bytes: a TEST_OUTPUT is a Tekton result, and a step's results share
/// its termination message (4096 bytes by default), with `IMAGES_PROCESSED` beside it.
const NOTE_LIMIT: usize = 1536;

/// What ends a note cut to [`NOTE_LIMIT`].
const CUT: &str = " … (cut: the text or JSON report names every finding)";

impl Tally {
    /// Notes one image.
    pub(super) fn add(&mut self, r: &ImageReport) {
        self.images += 1;
        let (behind, severity, kind) = match r.verdict {
            Verdict::Error => (&mut self.behind[0], Severity::Error, ""),
            Verdict::Fail => (&mut self.behind[1], Severity::Error, ""),
            Verdict::Pass if r.count(Severity::Warning) > 0 => {
                (&mut self.behind[2], Severity::Warning, "warning ")
            }
            Verdict::Pass => return,
        };
        let rules = rules_on_hosts(r, severity);
        let _ = write!(behind, "; {}: {kind}{rules}", super::labels::named(r));
        match r.verdict {
            Verdict::Error => self.errors += 1,
            Verdict::Fail => self.fails += 1,
            Verdict::Pass => self.warnings += 1,
        }
    }

    /// The result, its note ending with the run's `notes`.
    pub(super) fn result(&self, notes: &[String], now: std::time::SystemTime) -> TestOutput {
        let (errors, fails, warnings) = (self.errors, self.fails, self.warnings);
        let successes = self.images - errors - fails - warnings;
        let result = if errors > 0 {
            "ERROR"
        } else if fails > 0 {
            "FAILURE"
        } else if warnings > 0 {
            "WARNING"
        } else {
            "SUCCESS"
        };
        let mut note = format!(
            "imgcheck: {} image(s): {errors} could not be checked, {fails} failed, {warnings} passed with warnings, {successes} passed",
            self.images
        );
        // The images behind the result first (the ADR: the note corresponds to the result).
        self.behind.iter().for_each(|b| note.push_str(b));
        for n in notes {
            let _ = write!(note, "; note: {n}");
        }
        if note.len() > NOTE_LIMIT {
            let mut end = NOTE_LIMIT - CUT.len();
            while !note.is_char_boundary(end) {
                end -= 1;
            }
            note.truncate(end);
            note.push_str(CUT);
        }
        TestOutput {
            result: result.to_string(),
            timestamp: humantime::format_rfc3339_seconds(now).to_string(),
            note,
            namespace: "default".to_string(),
            successes,
            failures: fails,
            warnings,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::tests::report;

    #[test]
    fn konflux_results() {
        let now = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_796_216_661);
        let pass = || report(Verdict::Pass, &[]);
        let warn = || report(Verdict::Pass, &[Severity::Warning]);
        let fail = || report(Verdict::Fail, &[Severity::Error]);
        let error = || report(Verdict::Error, &[Severity::Error]);
        // (images, result, (successes, failures, warnings))
        let cases = [
            (vec![], "SUCCESS", (0, 0, 0)),
            (vec![pass()], "SUCCESS", (1, 0, 0)),
            (vec![warn()], "WARNING", (0, 0, 1)),
            (vec![pass(), warn()], "WARNING", (1, 0, 1)),
            (vec![pass(), fail()], "FAILURE", (1, 1, 0)),
            (vec![warn(), fail()], "FAILURE", (0, 1, 1)),
            (vec![pass(), error()], "ERROR", (1, 0, 0)),
            // ADR 0030's rank order: ERROR above FAILURE; the unreachable image is no failure.
            (vec![error(), fail()], "ERROR", (0, 1, 0)),
            (vec![fail(), warn(), error(), pass()], "ERROR", (1, 1, 1)),
        ];
        for (reports, want, (s, f, w)) in cases {
            let out = konflux(&reports, now);
            assert_eq!(out.result, want);
            assert_eq!((out.successes, out.failures, out.warnings), (s, f, w));
            assert_eq!(out.timestamp, "2026-12-02T13:04:21Z");
            assert_eq!(out.namespace, "default");
        }
    }

    /// Issue 36: the note names the hosts a rule fails on, and the warnings of an image that
    /// passed with them; a note past the limit is cut, with a marker, to fit a Tekton result.
    #[test]
    fn the_note_names_hosts_and_warnings_and_fits_a_result() {
        let mut fail = report(Verdict::Fail, &[Severity::Error, Severity::Error]);
        fail.reference = "q.io/bad:v1".into();
        fail.findings[0].host = Some("windows/amd64:10.0.20348".into());
        fail.findings[1].host = Some("windows/amd64:10.0.26100".into());
        let mut warn = report(Verdict::Pass, &[Severity::Warning]);
        warn.reference = "q.io/warn:v1".into();
        warn.findings[0].rule = crate::engine::Rule::UnsupportedBuild;
        let out = konflux(&[warn, fail], std::time::UNIX_EPOCH);
        assert!(
            out.note.ends_with(
                "; q.io/bad:v1: no-match on windows/amd64:10.0.20348 and windows/amd64:10.0.26100\
                 ; q.io/warn:v1: warning unsupported-build"
            ),
            "{}",
            out.note
        );
        let many: Vec<_> = (0..200)
            .map(|i| {
                let mut r = report(Verdict::Fail, &[Severity::Error]);
                r.reference = format!("q.io/ü-{i}:v1");
                r
            })
            .collect();
        let out = konflux(&many, std::time::UNIX_EPOCH);
        assert!(out.note.len() <= NOTE_LIMIT, "{}", out.note.len());
        assert!(out.note.ends_with(CUT), "{}", out.note);
        assert!(serde_json::to_string(&out).unwrap().len() < 2048);
    }

    #[test]
    fn the_note_names_the_images_behind_the_result_first() {
        let mut fail = report(Verdict::Fail, &[Severity::Error]);
        fail.reference = "quay.io/org/bad:v1".into();
        let mut error = report(Verdict::Error, &[Severity::Error]);
        error.reference = "quay.io/org/gone:v1".into();
        let out = konflux(&[fail, error], std::time::UNIX_EPOCH);
        assert_eq!(
            out.note,
            "imgcheck: 2 image(s): 1 could not be checked, 1 failed, 0 passed with warnings, \
             0 passed; quay.io/org/gone:v1: no-match; quay.io/org/bad:v1: no-match"
        );
    }
}
