//! Short labels every renderer uses: a digest cut for tables, a report's failing rules.

use crate::engine::{ImageReport, Origin, Severity};

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
