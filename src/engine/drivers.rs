//! The two halves of one CSI driver judged together (`driver-skew`): the Linux and the
//! Windows node plugin must come from one source revision and version. A run finds the halves
//! (pod templates, release components, the policy's `drivers:`) and the sources their images
//! name ([`EntrySource`]); this file is the pure judgement, one report per driver.
//!
//! When a run has both the cluster's current halves (`--from-manifests`) and the target
//! release's (`--from-release`), it also says which skew the rollout passes through. The
//! OpenShift CSI operators apply each DaemonSet from a controller of its own (library-go
//! `pkg/operator/csi/csidrivernodeservicecontroller`, `CSIDriverNodeServiceController.sync`:
//! one controller per DaemonSet manifest, each with its own sync and resync), and the
//! DaemonSet controller rolls each DaemonSet apart: the order is not decided, so both are
//! reported. Sources: docs/cluster.md, "One driver, both halves".

use super::binaries::Revision;
use super::finding::{Finding, ImageReport, Origin, verdict_of};
use super::halves::{DriverHalf, DriverStage};
use super::rules::Rule;
use super::severity::Severity;
use crate::policy::SkewSeverity;

/// One driver to judge: its name, how its halves were paired, and the halves at each stage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DriverCheck {
    /// The driver's name (`file.csi.azure.com`, or the workloads' common name).
    pub name: String,
    /// How the halves were paired, in words.
    pub paired_by: String,
    /// How serious a skew is (`drivers[].skew`).
    pub skew: SkewSeverity,
    /// The halves: the current stage first, then the target.
    pub stages: Vec<DriverStage>,
}

/// Do two revisions name the same commit? Equal, or one an abbreviation (7 or more hex
/// digits) of the other, case-insensitively.
pub(crate) fn same_revision(a: &str, b: &str) -> bool {
    let (a, b) = (a.to_ascii_lowercase(), b.to_ascii_lowercase());
    let (short, long) = if a.len() <= b.len() {
        (&a, &b)
    } else {
        (&b, &a)
    };
    short == long || (short.len() >= 7 && long.starts_with(short.as_str()))
}

/// Do two versions name the same release? Equal once a leading `v` is dropped.
fn same_version(a: &str, b: &str) -> bool {
    a.trim_start_matches('v') == b.trim_start_matches('v')
}

/// `1111111 (vcs-ref), 1111111 (go vcs.revision of /driver)`.
fn claims(list: &[Revision]) -> String {
    let shown: Vec<String> = list
        .iter()
        .map(|r| format!("{} ({})", r.revision, r.source))
        .collect();
    shown.join(", ")
}

/// Whether the claims of two halves disagree: some claim of one names another commit (or
/// version) than some claim of the other. `None` when either names none.
fn disagree(a: &[Revision], b: &[Revision], same: fn(&str, &str) -> bool) -> Option<bool> {
    if a.is_empty() || b.is_empty() {
        return None;
    }
    Some(
        a.iter()
            .any(|x| b.iter().any(|y| !same(&x.revision, &y.revision))),
    )
}

/// The findings about one stage's halves: `driver-skew` when their revisions or versions
/// disagree, `no-source-revision` when a half names no revision (nothing is claimed then).
fn stage_findings(name: &str, stage: &DriverStage, severity: Severity) -> Vec<Finding> {
    let (l, w) = (&stage.linux, &stage.windows);
    let at = format!("driver {name} ({} halves)", stage.stage);
    let mut out = Vec::new();
    let mut skew = |what: &str, left: &[Revision], right: &[Revision]| {
        let mut f = Finding::new(
            Rule::DriverSkew,
            format!(
                "{at}: the {} is built from {what} {} and the {} from {what} {}",
                l.name(),
                claims(left),
                w.name(),
                claims(right)
            ),
            None,
        );
        f.severity = severity;
        out.push(f);
    };
    if disagree(&l.revisions, &w.revisions, same_revision) == Some(true) {
        skew("revision", &l.revisions, &w.revisions);
    }
    if disagree(&l.versions, &w.versions, same_version) == Some(true) {
        skew("version", &l.versions, &w.versions);
    }
    let bare: Vec<String> = [l, w]
        .into_iter()
        .filter(|h| h.revisions.is_empty())
        .map(|h| match h.read {
            true => h.name(),
            false => format!("{} (not read)", h.name()),
        })
        .collect();
    if !bare.is_empty() {
        out.push(Finding::new(
            Rule::NoSourceRevision,
            format!(
                "{at}: cannot tell whether both halves come from one commit: {} names no \
                 source revision (no {} label, no Go vcs.revision)",
                bare.join(" and "),
                super::binaries::REVISION_LABELS.join(" / ")
            ),
            None,
        ));
    }
    out
}

/// The first revision a half names, for the rollout's words (`unknown` when none).
fn first_revision(h: &DriverHalf) -> &str {
    h.revisions
        .first()
        .map_or("an unknown revision", |r| &r.revision)
}

/// The skew a rollout from `current` to `target` passes through, as information: each
/// DaemonSet rolls on its own, in either order. `None` when neither half changes revision.
fn rollout_finding(name: &str, current: &DriverStage, target: &DriverStage) -> Option<Finding> {
    let moves = |c: &DriverHalf, t: &DriverHalf| {
        disagree(&c.revisions, &t.revisions, same_revision) != Some(false) || c.image != t.image
    };
    let (linux_moves, windows_moves) = (
        moves(&current.linux, &target.linux),
        moves(&current.windows, &target.windows),
    );
    if !linux_moves && !windows_moves {
        return None;
    }
    let (cl, cw) = (
        first_revision(&current.linux),
        first_revision(&current.windows),
    );
    let (tl, tw) = (
        first_revision(&target.linux),
        first_revision(&target.windows),
    );
    let message = format!(
        "driver {name}: during the rollout the Linux and Windows DaemonSets roll apart (the \
         operator applies each from its own controller, library-go \
         CSIDriverNodeServiceController, and the DaemonSet controller rolls each on its own), \
         so both orders are possible: Linux first runs the target Linux half ({tl}, {}) next \
         to the current Windows half ({cw}, {}); Windows first runs the current Linux half \
         ({cl}, {}) next to the target Windows half ({tw}, {}); each node runs its pod of \
         either revision until its DaemonSet has rolled",
        target.linux.image, current.windows.image, current.linux.image, target.windows.image,
    );
    let mut f = Finding::new(Rule::DriverSkew, message, None);
    f.severity = Severity::Info;
    Some(f)
}

/// The report of one driver: `driver NAME`, its stages in `origins`, the findings of each
/// stage and of the rollout between them.
pub fn judge_driver(check: &DriverCheck) -> ImageReport {
    let severity = match check.skew {
        SkewSeverity::Error => Severity::Error,
        SkewSeverity::Warning => Severity::Warning,
    };
    let mut findings: Vec<Finding> = (check.stages.iter())
        .flat_map(|s| stage_findings(&check.name, s, severity))
        .collect();
    let current = check.stages.iter().find(|s| s.stage == "current");
    let target = check.stages.iter().find(|s| s.stage == "target");
    if let (Some(c), Some(t)) = (current, target) {
        findings.extend(rollout_finding(&check.name, c, t));
    }
    findings.sort_by_key(|f| f.severity);
    let mut report = ImageReport::unread(&format!("driver {}", check.name), findings);
    report.verdict = verdict_of(&report.findings);
    report.origins = vec![Origin::Driver {
        driver: check.name.clone(),
        paired_by: check.paired_by.clone(),
        stages: check.stages.clone(),
    }];
    report
}

#[cfg(test)]
mod tests;
