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
    let mut findings = content::findings(graph);
    let matrix = hosts::matrix(graph, policy, runtimes);
    findings.extend(matrix.findings);
    findings.extend(entries::findings(&graph.root, policy, &matrix.selected));
    findings.extend(layers::findings(graph));
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
    }
}
