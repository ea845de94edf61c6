//! Judging one graph: the four kinds of findings, composed into an [`ImageReport`].
//!
//! - [`content`]: objects that are missing, corrupt, unparsable or schema1;
//! - [`hosts`]: what each host of the policy pulls under each runtime profile (the host matrix);
//! - [`entries`]: what each entry of the top list claims;
//! - [`layers`]: foreign layers and, with `--deep`, the Windows layer layout;
//! - [`binaries`]: with `--deep`, the program each image runs and the list's source revisions;
//! - [`text`]: wording the judges share.

mod binaries;
mod content;
pub(super) mod entries;
mod hosts;
mod layers;
mod text;

use super::binaries::binaries;
use super::finding::{ImageReport, verdict_of};
use crate::graph::Graph;
use crate::platform::RuntimeProfile;
use crate::policy::Policy;

/// Judges one graph against a policy and the runtime profiles its Windows nodes may run.
pub fn judge(graph: &Graph, policy: &Policy, runtimes: &[RuntimeProfile]) -> ImageReport {
    judge_with(graph, policy, runtimes, true)
}

/// [`judge`] without the findings about the graph's own objects (missing, corrupt or
/// unparsable manifests and configs, foreign layers): for a graph whose objects the caller
/// judges in its own words — the mirror gate names the mirror that lacks or corrupts them.
pub fn judge_selection(graph: &Graph, policy: &Policy, runtimes: &[RuntimeProfile]) -> ImageReport {
    judge_with(graph, policy, runtimes, false)
}

/// The report of `graph`: the host matrix, the entries' claims and the programs, with the
/// findings about its own objects and layers when `objects` says so.
fn judge_with(
    graph: &Graph,
    policy: &Policy,
    runtimes: &[RuntimeProfile],
    objects: bool,
) -> ImageReport {
    let mut findings = match objects {
        true => content::findings(graph),
        false => vec![],
    };
    let matrix = hosts::matrix(graph, policy, runtimes);
    findings.extend(matrix.findings);
    findings.extend(entries::findings(&graph.root, policy, &matrix.selected));
    if objects {
        findings.extend(layers::findings(graph));
    }
    findings.extend(binaries::findings(graph, policy));
    findings.sort_by_key(|f| f.severity);
    ImageReport {
        reference: graph.reference.clone(),
        origins: vec![],
        digest: Some(graph.root.digest.to_string()),
        verdict: verdict_of(&findings),
        findings,
        hosts: matrix.results,
        binaries: binaries(&graph.nodes()),
        signatures: vec![],
        sources: vec![],
        admissions: vec![],
    }
}
