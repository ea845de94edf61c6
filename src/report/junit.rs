//! The JUnit XML report of `verify`, `mirror-check` and `assemble` (docs/output.md, "JUnit"):
//! one `<testsuite>` per image, one `<testcase>` per row of the host matrix and one per rule
//! of the findings tied to no failing host, a `<failure>` (an `<error>` when the check could
//! not run) with the finding's message and hint; with `--nodes` and pod templates, a last
//! suite `placements` with one testcase per placement. The structure is the one the common CI
//! readers take (Jenkins' `junit-10.xsd`, Prow, GitLab): `testsuites` › `testsuite`
//! (`name`, `tests`, `failures`, `errors`, `skipped`) › `properties`, `testcase` (`name`,
//! `classname`) › `failure` | `error` (`type`, `message`, text), `system-out`.
//!
//! The report is written as its images come ([`Stream`]), so `<testsuites>` carries only its
//! `name`: its totals would have to be known before the first suite is written (the readers
//! add up the suites themselves; every attribute of `testsuites` is optional there).

use std::fmt::Write as _;

use super::labels::{HostRow, host_rows, node_text};
use crate::engine::{Finding, HostResult, HostStatus, ImageReport, Rule, Severity, Verdict};
use crate::engine::{NodePlacement, RunExtras};
use crate::escape::escape;

/// The start of the document, written before the first suite.
const HEAD: &str = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"imgcheck\">\n";
/// The end of the document.
const TAIL: &str = "</testsuites>\n";

/// The whole JUnit document for `reports`, with the placements of `extras` as a last suite:
/// the same bytes as the report written image by image (`report::Writer`).
pub fn junit_with(reports: &[ImageReport], extras: &RunExtras) -> String {
    let mut stream = Stream::default();
    let mut out = String::new();
    reports.iter().for_each(|r| stream.image(r, &mut out));
    out + &stream.end(extras)
}

/// The JUnit document written as its images come; nothing before the first image (a run
/// stopped before it leaves no document).
#[derive(Debug, Default)]
pub(super) struct Stream {
    /// Whether the head of the document was written.
    begun: bool,
}

impl Stream {
    /// Appends `report`'s suite (and the head of the document, for the first).
    pub(super) fn image(&mut self, report: &ImageReport, out: &mut String) {
        self.begin(out);
        suite(out, report);
    }

    /// The rest of the document: the placements' suite, then the end.
    pub(super) fn end(&mut self, extras: &RunExtras) -> String {
        let mut out = String::new();
        self.begin(&mut out);
        placements(&mut out, &extras.placements);
        out + TAIL
    }

    /// The rest of a document whose run stopped (`why`) after some images: a suite `imgcheck`
    /// whose one testcase `run` is an error saying why, then the end; nothing when no image
    /// was written.
    pub(super) fn stop(&self, why: &str) -> String {
        if !self.begun {
            return String::new();
        }
        let mut out = String::new();
        open_suite(&mut out, "imgcheck", [1, 0, 1]);
        let case = Case {
            name: "run".into(),
            classname: "imgcheck",
            outcome: Outcome::Error,
            kind: "stopped".into(),
            message: why.to_string(),
            body: String::new(),
        };
        case.write(&mut out);
        out.push_str("  </testsuite>\n");
        out + TAIL
    }

    fn begin(&mut self, out: &mut String) {
        if !self.begun {
            self.begun = true;
            out.push_str(HEAD);
        }
    }
}

/// How a testcase ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Passed,
    /// The image fails the policy there.
    Failure,
    /// It could not be checked (`fetch-error`).
    Error,
}

/// One testcase: its name, and for one that did not pass, the element's `type` (the rule),
/// `message` and text; for a passing one, `body` is its `system-out` (warnings, notes).
struct Case<'a> {
    name: String,
    classname: &'a str,
    outcome: Outcome,
    kind: String,
    message: String,
    body: String,
}

impl Case<'_> {
    fn write(&self, out: &mut String) {
        let head = format!(
            "    <testcase name=\"{}\" classname=\"{}\"",
            xml(&self.name),
            xml(self.classname)
        );
        out.push_str(&head);
        let element = match self.outcome {
            Outcome::Failure => "failure",
            Outcome::Error => "error",
            Outcome::Passed if self.body.is_empty() => return out.push_str("/>\n"),
            Outcome::Passed => {
                let _ = writeln!(
                    out,
                    ">\n      <system-out>{}</system-out>",
                    lines(&self.body)
                );
                return out.push_str("    </testcase>\n");
            }
        };
        let _ = writeln!(
            out,
            ">\n      <{element} type=\"{}\" message=\"{}\">{}</{element}>",
            xml(&self.kind),
            xml(&self.message),
            lines(&self.body)
        );
        out.push_str("    </testcase>\n");
    }
}

/// `  <testsuite name=… tests=… failures=… errors=… skipped="0">` and its newline; `counts`
/// are tests, failures, errors.
fn open_suite(out: &mut String, name: &str, [tests, failures, errors]: [usize; 3]) {
    let _ = writeln!(
        out,
        "  <testsuite name=\"{}\" tests=\"{tests}\" failures=\"{failures}\" errors=\"{errors}\" skipped=\"0\">",
        xml(name)
    );
}

/// The suite of one image: its digest and verdict as properties, a testcase per host row,
/// then one per rule of the findings no failing row carries.
fn suite(out: &mut String, r: &ImageReport) {
    let rows = host_rows(&r.hosts);
    let mut cases: Vec<Case> = rows.iter().map(|row| host_case(r, row)).collect();
    let carried = |f: &Finding| rows.iter().any(|row| carries(row.host, f));
    let mut rules: Vec<Rule> = Vec::new();
    for f in r.findings.iter().filter(|f| !carried(f)) {
        if !rules.contains(&f.rule) {
            rules.push(f.rule);
        }
    }
    cases.extend(rules.into_iter().map(|rule| rule_case(r, rule, &carried)));
    let count = |o: Outcome| cases.iter().filter(|c| c.outcome == o).count();
    let counts = [cases.len(), count(Outcome::Failure), count(Outcome::Error)];
    open_suite(out, &r.reference, counts);
    out.push_str("    <properties>\n");
    if let Some(d) = &r.digest {
        let _ = writeln!(
            out,
            "      <property name=\"digest\" value=\"{}\"/>",
            xml(d)
        );
    }
    let verdict = match r.verdict {
        Verdict::Pass => "pass",
        Verdict::Fail => "fail",
        Verdict::Error => "error",
    };
    let _ = writeln!(
        out,
        "      <property name=\"verdict\" value=\"{verdict}\"/>"
    );
    out.push_str("    </properties>\n");
    cases.iter().for_each(|c| c.write(out));
    out.push_str("  </testsuite>\n");
}

/// Whether `f` is what the failing host row `h` shows: a finding of the row's rule about
/// its host.
fn carries(h: &HostResult, f: &Finding) -> bool {
    h.status == HostStatus::Fails(f.rule) && f.host.as_deref() == Some(h.platform.as_str())
}

/// The outcome of a finding of `rule` at `severity`.
fn outcome(rule: Rule, severity: Severity) -> Outcome {
    match (rule, severity) {
        (Rule::FetchError, Severity::Error) => Outcome::Error,
        (_, Severity::Error) => Outcome::Failure,
        _ => Outcome::Passed,
    }
}

/// `MESSAGE\nhint: HINT` for each finding, one after another.
fn explain<'f>(findings: impl Iterator<Item = &'f Finding>) -> String {
    let mut text = String::new();
    for f in findings {
        let nodes = f.nodes.map_or(String::new(), |os| format!("{os} nodes: "));
        let _ = writeln!(text, "{nodes}{}", escape(&f.message));
        if f.severity != Severity::Info {
            let _ = writeln!(text, "hint: {}", f.hint);
        }
    }
    text
}

/// The testcase of one host row: named by its host, its runtime when the row stands for one
/// runtime, and its nodes; failing with the findings it carries.
fn host_case<'r>(r: &'r ImageReport, row: &HostRow) -> Case<'r> {
    let h = row.host;
    let mut name = h.platform.clone();
    if let (false, Some(runtime)) = (row.all, h.runtime) {
        let _ = write!(name, " under {}", runtime.name());
    }
    if !h.nodes.is_empty() {
        let _ = write!(name, " ({})", node_text(&h.nodes));
    }
    let HostStatus::Fails(rule) = h.status else {
        return passed(name, &r.reference);
    };
    let findings: Vec<&Finding> = r.findings.iter().filter(|f| carries(h, f)).collect();
    let message = match findings.first() {
        Some(f) => f.message.clone(),
        None => format!("{} gets {rule}", h.platform),
    };
    Case {
        name,
        classname: &r.reference,
        outcome: match rule {
            Rule::FetchError => Outcome::Error,
            _ => Outcome::Failure,
        },
        kind: rule.to_string(),
        message,
        body: explain(findings.into_iter()),
    }
}

/// The testcase of one rule's findings that no failing host row carries: failing when one
/// is an error, else passing with the warnings and notes as its output.
fn rule_case<'r>(r: &'r ImageReport, rule: Rule, carried: &dyn Fn(&Finding) -> bool) -> Case<'r> {
    let findings: Vec<&Finding> = r
        .findings
        .iter()
        .filter(|f| f.rule == rule && !carried(f))
        .collect();
    let worst = findings
        .iter()
        .map(|f| outcome(f.rule, f.severity))
        .find(|o| *o != Outcome::Passed)
        .unwrap_or(Outcome::Passed);
    let message = match worst {
        Outcome::Passed => String::new(),
        _ => findings
            .iter()
            .find(|f| f.severity == Severity::Error)
            .map_or(String::new(), |f| f.message.clone()),
    };
    Case {
        name: rule.to_string(),
        classname: &r.reference,
        outcome: worst,
        kind: rule.to_string(),
        message,
        body: explain(findings.into_iter()),
    }
}

/// A passing testcase without output.
fn passed(name: String, classname: &str) -> Case<'_> {
    Case {
        name,
        classname,
        outcome: Outcome::Passed,
        kind: String::new(),
        message: String::new(),
        body: String::new(),
    }
}

/// The suite `placements`: one testcase per placement of the per-node answer (none: no
/// suite).
fn placements(out: &mut String, placements: &[NodePlacement]) {
    if placements.is_empty() {
        return;
    }
    let failing = placements.iter().filter(|p| p.fails()).count();
    open_suite(out, "placements", [placements.len(), failing, 0]);
    for p in placements {
        let ns = p
            .namespace
            .as_deref()
            .map_or(String::new(), |n| format!("{n}/"));
        let name = format!("{}: {} {ns}{} {}", p.node, p.kind, p.name, p.container);
        let mut case = passed(name, "placements");
        if let HostStatus::Fails(rule) = p.status {
            case.outcome = Outcome::Failure;
            case.kind = rule.to_string();
            case.message = p.line();
        }
        case.write(out);
    }
    out.push_str("  </testsuite>\n");
}

/// `text`'s lines, each as [`xml`] writes it.
fn lines(text: &str) -> String {
    text.split('\n').map(xml).collect::<Vec<_>>().join("\n")
}

/// `text` as XML character data or an attribute value, on one line: first through
/// [`escape`], as text output shows it (no control character is left: XML 1.0 allows none
/// but tab and line ends, and a CI's page would show them raw; nor a bidirectional mark),
/// then `&`, `<`, `>`, `"` and `'` as entities, and the two characters XML 1.0 cannot hold
/// that [`escape`] leaves (U+FFFE, U+FFFF) written out the way it writes the others.
fn xml(text: &str) -> String {
    let text = escape(text);
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\u{fffe}' | '\u{ffff}' => {
                let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Verdict;
    use crate::report::tests::report;

    /// The elements named `name` under `node`.
    fn children<'a>(
        node: roxmltree::Node<'a, 'a>,
        name: &'a str,
    ) -> impl Iterator<Item = roxmltree::Node<'a, 'a>> {
        node.children().filter(move |c| c.has_tag_name(name))
    }

    /// A failing host row carries its finding (message and hint) as one `<failure>`; the
    /// finding of a rule no row carries is a testcase of its own; the counts add up.
    #[test]
    fn a_failing_host_is_one_failure_with_its_finding_and_hint() {
        let mut r = report(Verdict::Fail, &[Severity::Error, Severity::Warning]);
        r.findings[0].host = Some("linux/amd64".into());
        r.findings[1].rule = Rule::Attestation;
        let out = junit_with(&[r], &RunExtras::default());
        let doc = roxmltree::Document::parse(&out).expect("well-formed XML");
        let suite = children(doc.root_element(), "testsuite").next().unwrap();
        assert_eq!(suite.attribute("tests"), Some("2"), "{out}");
        assert_eq!(suite.attribute("failures"), Some("1"), "{out}");
        let cases: Vec<_> = children(suite, "testcase").collect();
        assert_eq!(cases[0].attribute("name"), Some("linux/amd64"), "{out}");
        let failure = children(cases[0], "failure").next().expect("a failure");
        assert_eq!(failure.attribute("type"), Some("no-match"));
        assert_eq!(failure.attribute("message"), Some("m"));
        assert_eq!(failure.text(), Some("m\nhint: h\n"));
        // The warning passes, its text kept as output.
        assert_eq!(cases[1].attribute("name"), Some("attestation"), "{out}");
        assert_eq!(children(cases[1], "failure").count(), 0, "{out}");
        let said = children(cases[1], "system-out").next().unwrap().text();
        assert_eq!(said, Some("m\nhint: h\n"), "{out}");
    }

    /// What a registry or an input says reaches the document as text: markup characters as
    /// entities, controls and the characters XML 1.0 cannot hold written out, so the document
    /// parses and says what text output says.
    #[test]
    fn hostile_values_stay_text() {
        let mut r = report(Verdict::Error, &[Severity::Error]);
        r.reference = "q.io/a<b>&\"c\"'d'\u{1b}[2J\u{0}\u{fffe}".into();
        r.findings[0].rule = Rule::FetchError;
        r.findings[0].message = "</failure><testcase name=\"x\"/>\nPASS".into();
        let out = junit_with(&[r], &RunExtras::default());
        let doc = roxmltree::Document::parse(&out).expect("well-formed XML");
        let suite = children(doc.root_element(), "testsuite").next().unwrap();
        assert_eq!(
            suite.attribute("name"),
            Some("q.io/a<b>&\"c\"'d'\\u{1b}[2J\\u{0}\\u{fffe}")
        );
        assert_eq!(suite.attribute("errors"), Some("1"), "{out}");
        let case = children(suite, "testcase").last().unwrap();
        let error = children(case, "error")
            .next()
            .expect("fetch-error is an error");
        assert_eq!(
            error.attribute("message"),
            Some("</failure><testcase name=\"x\"/>\\nPASS")
        );
        assert_eq!(
            doc.descendants()
                .filter(|n| n.has_tag_name("testcase"))
                .count(),
            2
        );
    }

    /// A run stopped after an image leaves a closed document whose last suite says why; one
    /// stopped before any leaves nothing.
    #[test]
    fn a_stopped_document_is_closed_with_an_error() {
        let mut stream = Stream::default();
        assert_eq!(stream.stop("why"), "");
        let mut out = String::new();
        stream.image(&report(Verdict::Pass, &[]), &mut out);
        out.push_str(&stream.stop("oci:x: not an OCI layout"));
        let doc = roxmltree::Document::parse(&out).expect("well-formed XML");
        let error = doc.descendants().find(|n| n.has_tag_name("error")).unwrap();
        assert_eq!(error.attribute("message"), Some("oci:x: not an OCI layout"));
        assert_eq!(error.attribute("type"), Some("stopped"));
    }
}
