//! The text report of `verify` and `mirror-check`: per image a verdict line, the host matrix
//! and the findings; for several images, a summary.

use std::fmt::Write as _;

use crate::engine::{BinaryEntry, HostResult, ImageReport, Severity, Verdict};

use super::labels::{HostRow, error_rules, host_rows, node_text, short};
use crate::engine::{NodePlacement, RunExtras};
use crate::escape::escape;

/// The text report: per image a verdict line, the host matrix, and the findings; then, for
/// more than one image, the summary.
pub fn text(reports: &[ImageReport]) -> String {
    let mut out = String::new();
    let mut summary = Summary::default();
    for r in reports {
        block(&mut out, r);
        summary.add(r);
    }
    summary.write(&mut out);
    out
}

/// [`text`], then the nodes' runtimes with the profile each is judged under and why, then the
/// failing placements of the per-node answer, one line each (none: nothing added).
pub fn text_with(reports: &[ImageReport], extras: &RunExtras) -> String {
    let mut out = text(reports);
    extras_lines(&mut out, extras);
    out
}

/// The end of the text report past its summary: the nodes' runtimes with the profile each is
/// judged under and why, then the failing placements.
pub(super) fn extras_lines(out: &mut String, extras: &RunExtras) {
    if !extras.runtimes.is_empty() {
        let _ = writeln!(out, "\nnode runtimes:");
        for r in &extras.runtimes {
            let _ = writeln!(out, "  {}", escape(&r.line()));
        }
    }
    if let Some(u) = &extras.upgrade {
        let _ = writeln!(out, "\nupgrade: {}", escape(&u.target.line()));
        for c in &u.nodes {
            let _ = writeln!(out, "  {}", escape(&c.line()));
        }
        for v in &u.images {
            let _ = writeln!(out, "  verdict changes: {}", escape(&v.line()));
        }
    }
    failing_placements(out, &extras.placements);
}

/// One image's part of the text report: its verdict line, origins, host matrix, programs and
/// findings.
pub(super) fn block(out: &mut String, r: &ImageReport) {
    let _ = writeln!(
        out,
        "{}  {}  {}",
        verdict_word(r.verdict),
        escape(&r.reference),
        escape(&r.digest.as_deref().map(short).unwrap_or_default())
    );
    for origin in &r.origins {
        let _ = writeln!(out, "  from {}", escape(&origin.to_string()));
    }
    matrix(out, &r.hosts);
    for b in &r.binaries {
        let _ = writeln!(out, "  program  {}", escape(&program_line(b)));
    }
    findings(out, r);
}

/// The failing placements of the per-node answer, one line each, after a heading (none:
/// nothing).
fn failing_placements(out: &mut String, placements: &[NodePlacement]) {
    let failing: Vec<&NodePlacement> = placements.iter().filter(|p| p.fails()).collect();
    if !failing.is_empty() {
        let _ = writeln!(
            out,
            "\nfailing placements ({} of {}):",
            failing.len(),
            placements.len()
        );
        for p in failing {
            let _ = writeln!(out, "  {}", escape(&p.line()));
        }
    }
}

/// One line per image read with `--deep`: its platform, each program on the way (path and
/// what its headers say, or why not), and the revisions it names.
fn program_line(b: &BinaryEntry) -> String {
    let programs: Vec<String> = b
        .programs
        .iter()
        .map(|p| match (&p.path, &p.description) {
            (Some(path), Some(d)) => format!("{path} ({d})"),
            _ => format!("{} {}", p.name, p.status),
        })
        .collect();
    let mut line = match programs.is_empty() {
        true => format!("{}  no command", b.entry),
        false => format!("{}  {}", b.entry, programs.join(" -> ")),
    };
    let mut revisions: Vec<&str> = b.revisions.iter().map(|r| r.revision.as_str()).collect();
    revisions.dedup();
    if !revisions.is_empty() {
        line.push_str(&format!("  revision {}", revisions.join(", ")));
    }
    line
}

fn verdict_word(verdict: Verdict) -> &'static str {
    match verdict {
        Verdict::Pass => "PASS",
        Verdict::Fail => "FAIL",
        Verdict::Error => "ERROR",
    }
}

/// One row of the host matrix: host, runtime, isolation, selected digest, os.version, status.
type Row = [String; 7];

/// The host matrix, when the image has host results. Windows rows name how the pods are
/// isolated (`process`, `hostprocess`); Linux rows show `-` there. Hosts read from a cluster
/// end their row with the nodes they stand for.
fn matrix(out: &mut String, hosts: &[HostResult]) {
    if hosts.is_empty() {
        return;
    }
    let with_nodes = hosts.iter().any(|h| !h.nodes.is_empty());
    let _ = writeln!(
        out,
        "  {:<26} {:<16} {:<11} {:<20} {:<17} {}",
        "host",
        "runtime",
        "isolation",
        "selects",
        "os.version",
        if with_nodes {
            "status                nodes"
        } else {
            "status"
        }
    );
    for [p, rt, iso, sel, v, st, nodes] in rows(hosts) {
        let line = format!("  {p:<26} {rt:<16} {iso:<11} {sel:<20} {v:<17} {st:<21} {nodes}");
        let _ = writeln!(out, "{}", line.trim_end());
    }
}

/// The matrix rows: runtimes that agree for a host (the same platform and nodes) collapse
/// into one row (`all`).
fn rows(hosts: &[HostResult]) -> Vec<Row> {
    host_rows(hosts)
        .into_iter()
        .map(|HostRow { host: o, all }| {
            let runtime = match (all, o.runtime) {
                (_, None) => "-".to_string(),
                (true, Some(_)) => "all".to_string(),
                (false, Some(p)) => p.name().to_string(),
            };
            [
                escape(&o.platform).into_owned(),
                runtime,
                o.isolation
                    .map_or("-".to_string(), |i| i.name().to_string()),
                o.selected
                    .as_deref()
                    .map(|d| escape(&short(d)).into_owned())
                    .unwrap_or_else(|| "(none)".into()),
                o.os_version
                    .as_deref()
                    .map_or_else(|| "-".into(), |v| escape(v).into_owned()),
                o.status.to_string(),
                node_text(&o.nodes),
            ]
        })
        .collect()
}

/// Each finding with its severity and rule; errors and warnings also get their hint.
fn findings(out: &mut String, r: &ImageReport) {
    for f in &r.findings {
        let sev = match f.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "info",
        };
        let nodes = f.nodes.map_or(String::new(), |os| format!("{os} nodes: "));
        let _ = writeln!(
            out,
            "  {sev:<7} {:<21} {nodes}{}",
            f.rule,
            escape(&f.message)
        );
        if f.severity != Severity::Info {
            let _ = writeln!(out, "          hint: {}", f.hint);
        }
    }
}

/// The summary of a text report, kept as its images pass by: one line per image (failing
/// images first, then those that could not be checked, then passes, each kind in input
/// order), then the counts. Only these lines are kept of each image (about the length of
/// its reference).
#[derive(Debug, Default)]
pub(super) struct Summary {
    /// The lines of failing images, of images not checked, of passing ones.
    lines: [String; 3],
    /// Images passed, failed, not checked.
    counts: [usize; 3],
}

impl Summary {
    /// Notes one image.
    pub(super) fn add(&mut self, r: &ImageReport) {
        let (lines, count) = match r.verdict {
            Verdict::Fail => (0, 1),
            Verdict::Error => (1, 2),
            Verdict::Pass => (2, 0),
        };
        let line = format!(
            "  {:<5} {}  {}",
            verdict_word(r.verdict),
            escape(&super::labels::named(r)),
            error_rules(r).join(",")
        );
        let _ = writeln!(self.lines[lines], "{}", line.trim_end());
        self.counts[count] += 1;
    }

    /// The summary, for more than one image (else nothing).
    pub(super) fn write(&self, out: &mut String) {
        let [pass, fail, error] = self.counts;
        let images = pass + fail + error;
        if images <= 1 {
            return;
        }
        let _ = writeln!(out, "\nsummary:");
        self.lines.iter().for_each(|l| out.push_str(l));
        let _ = writeln!(
            out,
            "{images} images: {pass} pass, {fail} fail, {error} error"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::HostStatus;
    use crate::report::tests::report;

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
    }

    /// Issue 37, item 5: a release component's summary line and Konflux note name the
    /// component, not only the digest.
    #[test]
    fn summaries_name_release_components() {
        use crate::engine::Origin;
        let mut component = report(Verdict::Fail, &[Severity::Error]);
        component.origins = vec![Origin::Release {
            release: "quay.io/openshift-release-dev/ocp-release:4.18.0-multi".into(),
            release_digest: "sha256:00".into(),
            version: Some("4.18.0".into()),
            tag: "azure-file-csi-driver".into(),
        }];
        let reports = [component, report(Verdict::Pass, &[])];
        let out = text(&reports);
        assert!(
            out.contains("  FAIL  r-Fail (azure-file-csi-driver)  no-match"),
            "{out}"
        );
        let note = super::super::konflux(&reports, std::time::SystemTime::UNIX_EPOCH).note;
        assert!(
            note.contains("; r-Fail (azure-file-csi-driver): no-match"),
            "{note}"
        );
    }

    /// Issue 12: the matrix names the isolation of Windows rows and the runtime of Linux rows.
    #[test]
    fn matrix_names_isolation_and_linux_runtime() {
        use crate::platform::RuntimeProfile;
        use crate::policy::Isolation;
        let row = |platform: &str, runtime, isolation| HostResult {
            platform: platform.into(),
            runtime: Some(runtime),
            isolation,
            selected: None,
            os_version: None,
            status: HostStatus::Ok,
            nodes: vec![],
        };
        let mut r = report(Verdict::Pass, &[]);
        r.hosts = vec![
            row("linux/amd64", RuntimeProfile::CRI_O, None),
            row(
                "windows/amd64:10.0.17763",
                RuntimeProfile::CONTAINERD_1_7,
                Some(Isolation::Hostprocess),
            ),
            row(
                "windows/amd64:10.0.17763",
                RuntimeProfile::CONTAINERD_2_3,
                Some(Isolation::Hostprocess),
            ),
        ];
        let out = text(&[r]);
        let lines: Vec<&str> = out.lines().collect();
        assert!(lines[1].contains("runtime          isolation"), "{out}");
        assert!(
            lines[2].starts_with("  linux/amd64                cri-o            -  "),
            "{out}"
        );
        assert!(
            lines[3].contains("windows/amd64:10.0.17763   all              hostprocess"),
            "{out}"
        );
        assert_eq!(lines.len(), 4, "{out}");
    }

    /// Issue 13: hosts read from a cluster end their row with their nodes; rows of one
    /// platform standing for different nodes do not collapse.
    #[test]
    fn matrix_names_the_nodes_of_cluster_hosts() {
        use crate::platform::RuntimeProfile;
        let row = |runtime, status: HostStatus, nodes: &[&str]| HostResult {
            platform: "windows/amd64:10.0.17763".into(),
            runtime: Some(runtime),
            isolation: None,
            selected: None,
            os_version: None,
            status,
            nodes: nodes.iter().map(ToString::to_string).collect(),
        };
        let no_match = HostStatus::Fails(crate::engine::Rule::NoMatch);
        let mut r = report(Verdict::Fail, &[]);
        r.hosts = vec![
            row(RuntimeProfile::CONTAINERD_1_7, no_match, &["w-a", "w-b"]),
            row(RuntimeProfile::CONTAINERD_2_2, no_match, &["w-c"]),
        ];
        let out = text(&[r]);
        let lines: Vec<&str> = out.lines().collect();
        assert!(lines[1].ends_with("status                nodes"), "{out}");
        assert!(
            lines[2].contains("containerd-1.7")
                && lines[2].ends_with("no-match              2: w-a, w-b"),
            "{out}"
        );
        assert!(
            lines[3].contains("containerd-2.2") && lines[3].ends_with("1: w-c"),
            "{out}"
        );
    }
}
