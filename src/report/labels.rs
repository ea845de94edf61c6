//! Short labels every renderer uses: a digest cut for tables, a report's failing rules, the
//! rows of the host matrix and the nodes a row stands for.

use crate::engine::{HostResult, ImageReport, Origin, Severity};
use crate::escape::escape;

/// A report's reference for summaries and notes, with the release components it is
/// (`--from-release`): `quay.io/…@sha256:… (azure-file-csi-driver)`.
pub(super) fn named(report: &ImageReport) -> String {
    let components: Vec<&str> = (report.origins.iter())
        .filter_map(|o| match o {
            // A component the payload lacks is already named `REF#NAME`.
            Origin::Release { tag, .. } if !report.reference.ends_with(&format!("#{tag}")) => {
                Some(tag.as_str())
            }
            _ => None,
        })
        .collect();
    match components.is_empty() {
        true => report.reference.clone(),
        false => format!("{} ({})", report.reference, components.join(", ")),
    }
}

/// The rules of a report's error findings, consecutive repeats dropped (summaries and notes).
pub(super) fn error_rules(report: &ImageReport) -> Vec<String> {
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
pub(super) fn short(d: &str) -> String {
    match d.split_once(':') {
        Some((alg, hex)) if hex.len() > 12 => format!("{alg}:{}", &hex[..12]),
        _ => d.to_string(),
    }
}

/// `2: winworker-4kq8x, winworker-9tbzm` (at most five names, then how many more), or empty
/// for a policy's host; names shown through [`escape`].
pub(super) fn node_text(nodes: &[String]) -> String {
    const NAMED: usize = 5;
    let mut text = match nodes.len() {
        0 => return String::new(),
        n => {
            let named: Vec<_> = nodes[..n.min(NAMED)].iter().map(|n| escape(n)).collect();
            format!("{n}: {}", named.join(", "))
        }
    };
    if nodes.len() > NAMED {
        text.push_str(&format!(" and {} more", nodes.len() - NAMED));
    }
    text
}

/// One row of the host matrix: a host under one runtime, or under all of its runtimes
/// (`all`) when they agree.
pub(super) struct HostRow<'a> {
    /// The host result the row shows (the first of its runtimes when `all`).
    pub(super) host: &'a HostResult,
    /// Whether the row stands for several runtimes that agree.
    pub(super) all: bool,
}

/// The rows of the host matrix: the runtimes of one host (the same platform and nodes, in a
/// run) that select the same image with the same status collapse into one row.
pub(super) fn host_rows(hosts: &[HostResult]) -> Vec<HostRow<'_>> {
    let mut rows = Vec::new();
    let mut i = 0;
    while i < hosts.len() {
        let h = &hosts[i];
        let same = hosts[i..]
            .iter()
            .take_while(|o| o.platform == h.platform && o.nodes == h.nodes)
            .count();
        let group = &hosts[i..i + same];
        let agree = group
            .iter()
            .all(|o| o.selected == h.selected && o.status == h.status);
        match agree {
            true => rows.push(HostRow {
                host: h,
                all: same > 1,
            }),
            false => rows.extend(group.iter().map(|host| HostRow { host, all: false })),
        }
        i += same;
    }
    rows
}

/// The rules of a report's findings of `severity`, each once in the order found, with the
/// hosts their findings name: `no-match on windows/amd64:10.0.17763 and
/// windows/amd64:10.0.26100, os-version-missing` (unescaped: for JSON).
pub(super) fn rules_on_hosts(report: &ImageReport, severity: Severity) -> String {
    let mut rules: Vec<(String, Vec<&str>)> = Vec::new();
    for f in report.findings.iter().filter(|f| f.severity == severity) {
        let rule = f.rule.to_string();
        let at = match rules.iter().position(|(r, _)| *r == rule) {
            Some(at) => at,
            None => {
                rules.push((rule, Vec::new()));
                rules.len() - 1
            }
        };
        let hosts = &mut rules[at].1;
        if let Some(h) = f.host.as_deref().filter(|h| !hosts.contains(h)) {
            hosts.push(h);
        }
    }
    let parts: Vec<String> = rules
        .into_iter()
        .map(|(rule, hosts)| match hosts.is_empty() {
            true => rule,
            false => format!("{rule} on {}", hosts.join(" and ")),
        })
        .collect();
    parts.join(", ")
}
