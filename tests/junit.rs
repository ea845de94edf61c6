//! `--format junit` (issue 36) of the commands that judge — `verify`, `mirror-check`,
//! `assemble --report junit` — against a real registry: the output parses as XML, has the
//! structure the common JUnit readers take (checked element by element and attribute by
//! attribute, the XSD being out of reach without a network), and one failure per failing host.

use crate::common::{Registry, fixture, run_imgcheck as run};

/// An element's name, the children it may have, the attributes it must carry and those it may.
type Element = (
    &'static str,
    &'static [&'static str],
    &'static [&'static str],
    &'static [&'static str],
);

/// The children each element may have, and the attributes it must and may carry: the subset
/// of Jenkins' `junit-10.xsd` (the schema Jenkins, GitLab and Prow's readers accept) that
/// imgcheck writes. An element or attribute outside it fails the check.
const SCHEMA: &[Element] = &[
    // (element, children, required attributes, optional attributes)
    (
        "testsuites",
        &["testsuite"],
        &[],
        &["name", "tests", "failures", "errors", "skipped", "time"],
    ),
    (
        "testsuite",
        &["properties", "testcase", "system-out", "system-err"],
        &["name", "tests", "failures", "errors", "skipped"],
        &["time", "timestamp", "hostname", "id", "package"],
    ),
    ("properties", &["property"], &[], &[]),
    ("property", &[], &["name", "value"], &[]),
    (
        "testcase",
        &["failure", "error", "skipped", "system-out", "system-err"],
        &["name", "classname"],
        &["time"],
    ),
    ("failure", &[], &["message", "type"], &[]),
    ("error", &[], &["message", "type"], &[]),
    ("skipped", &[], &[], &["message"]),
    ("system-out", &[], &[], &[]),
    ("system-err", &[], &[], &[]),
];

/// Parses `xml` and checks it against [`SCHEMA`], and that each suite's counts are its
/// testcases': `tests` all of them, `failures` those with a `<failure>`, `errors` those with
/// an `<error>`, `skipped` those skipped; a testcase has at most one outcome element.
pub fn assert_junit(xml: &str) -> roxmltree::Document<'_> {
    let doc = roxmltree::Document::parse(xml).unwrap_or_else(|e| panic!("not XML ({e}):\n{xml}"));
    assert_eq!(doc.root_element().tag_name().name(), "testsuites", "{xml}");
    for node in doc.descendants().filter(roxmltree::Node::is_element) {
        let name = node.tag_name().name();
        let (_, children, required, optional) = SCHEMA
            .iter()
            .find(|(e, ..)| *e == name)
            .unwrap_or_else(|| panic!("<{name}> is no JUnit element:\n{xml}"));
        for a in node.attributes() {
            assert!(
                required.contains(&a.name()) || optional.contains(&a.name()),
                "<{name} {}> is no JUnit attribute:\n{xml}",
                a.name()
            );
        }
        for r in *required {
            assert!(node.has_attribute(*r), "<{name}> lacks {r}:\n{xml}");
        }
        for c in node.children().filter(roxmltree::Node::is_element) {
            let child = c.tag_name().name();
            assert!(children.contains(&child), "<{child}> in <{name}>:\n{xml}");
        }
        if name == "testsuite" {
            check_counts(node, xml);
        }
    }
    doc
}

fn check_counts(suite: roxmltree::Node, xml: &str) {
    let cases: Vec<_> = suite
        .children()
        .filter(|c| c.has_tag_name("testcase"))
        .collect();
    let with = |outcome: &str| {
        cases
            .iter()
            .filter(|c| c.children().any(|o| o.has_tag_name(outcome)))
            .count()
    };
    for (attr, want) in [
        ("tests", cases.len()),
        ("failures", with("failure")),
        ("errors", with("error")),
        ("skipped", with("skipped")),
    ] {
        assert_eq!(
            suite.attribute(attr),
            Some(want.to_string().as_str()),
            "{attr} of {:?}:\n{xml}",
            suite.attribute("name")
        );
    }
    for c in &cases {
        let outcomes = c
            .children()
            .filter(|o| ["failure", "error", "skipped"].contains(&o.tag_name().name()))
            .count();
        assert!(outcomes <= 1, "{:?}:\n{xml}", c.attribute("name"));
    }
}

/// The names of the testcases of `suite` that fail, with their failure's type.
pub fn failing_cases(doc: &roxmltree::Document, suite: &str) -> Vec<(String, String)> {
    let suite = doc
        .descendants()
        .find(|n| n.has_tag_name("testsuite") && n.attribute("name") == Some(suite))
        .unwrap_or_else(|| panic!("no suite {suite}"));
    suite
        .children()
        .filter(|c| c.has_tag_name("testcase"))
        .filter_map(|c| {
            let failure = c.children().find(|f| f.has_tag_name("failure"))?;
            Some((
                c.attribute("name")?.to_string(),
                failure.attribute("type")?.to_string(),
            ))
        })
        .collect()
}

/// verify: a good list passes every case; a list without a WS2019 entry has one failure, on
/// the WS2019 host, with the finding's hint; an unreachable image is an `<error>`.
#[test]
fn verify_junit_has_one_failure_per_failing_host() {
    let registry = Registry::start();
    let good = registry.push_layout(&fixture("good"), "csi/good", "v1");
    registry.push_layout(&fixture("ltsc2022-only"), "csi/partial", "v1");
    let good = format!("{}/csi/good@{good}", registry.host());
    let partial = format!("{}/csi/partial:v1", registry.host());
    let gone = "127.0.0.1:1/csi/gone:v1";
    let out = run(&[
        "verify",
        &good,
        &partial,
        gone,
        "--format",
        "junit",
        "--retries",
        "0",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let xml = String::from_utf8(out.stdout).unwrap();
    let doc = assert_junit(&xml);
    assert_eq!(failing_cases(&doc, &good), []);
    assert_eq!(
        failing_cases(&doc, &partial),
        [(
            "windows/amd64:10.0.17763".to_string(),
            "no-match".to_string()
        )]
    );
    assert!(
        xml.contains("hint: add an entry built for this host"),
        "{xml}"
    );
    let gone_suite = doc
        .descendants()
        .find(|n| n.attribute("name") == Some(gone))
        .unwrap();
    assert_eq!(gone_suite.attribute("errors"), Some("1"), "{xml}");
}

/// mirror-check and assemble judge too: the same document, for the gate before mirroring and
/// for the list assemble pushed (its reference on standard error, not in the XML).
#[test]
fn mirror_check_and_assemble_write_junit() {
    let registry = Registry::start();
    registry.push_layout(&fixture("ltsc2022-only"), "csi/partial", "v1");
    let partial = format!("{}/csi/partial:v1", registry.host());
    let out = run(&[
        "mirror-check",
        "--pre",
        &partial,
        "--sandbox-image",
        "none",
        "--format",
        "junit",
    ]);
    let xml = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(1), "{xml}");
    let doc = assert_junit(&xml);
    let failing = failing_cases(&doc, &partial);
    assert!(
        failing
            .iter()
            .any(|(host, _)| host.starts_with("windows/amd64:10.0.17763")),
        "{xml}"
    );

    let child = format!("{}/csi/partial@{}", registry.host(), W2022);
    let target = format!("{}/csi/assembled:v1", registry.host());
    let out = run(&["assemble", "--target", &target, &child, "--report", "junit"]);
    let xml = String::from_utf8(out.stdout).unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{xml}{stderr}");
    assert!(
        stderr.contains(&format!("imgcheck: pushed {target}@sha256:")),
        "{stderr}"
    );
    let doc = assert_junit(&xml);
    let suite = doc
        .descendants()
        .find(|n| n.has_tag_name("testsuite"))
        .unwrap();
    let pushed = format!("{}/csi/assembled@sha256:", registry.host());
    assert!(
        suite.attribute("name").unwrap().starts_with(&pushed),
        "{xml}"
    );
    assert!(suite.attribute("failures") != Some("0"), "{xml}");
}

/// The WS2022 child of the fixture lists.
const W2022: &str = "sha256:8888abdb127247b9029b295a056efda3ab86a1b275850c397f6d51b1be2b1b58";
