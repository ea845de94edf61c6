//! Before mirroring with oc-mirror v2 (`mirror-check --pre --from-imageset`): what oc-mirror
//! will copy of each `mirror.additionalImages[]` entry, and where it will put it, judged
//! against the nodes that will pull it (docs/mirroring.md, "oc-mirror").
//!
//! - `platforms` (openshift/oc-mirror `internal/pkg/api/v2alpha1/type_config.go`
//!   `AdditionalImage.Platforms`, `type_platform.go` `InstancePlatformFilter`): only the list
//!   entries whose `os/architecture` is listed are copied; an empty filter copies every
//!   platform (`type_internal.go` `CopyImageSchema.Platforms`: nil means all). The filter has
//!   no `os.version`, so `windows/amd64` keeps every Windows build. Entries left out whose
//!   OS and architecture a host of the policy has, Linux or Windows, are
//!   `mirror-platform-dropped`.
//! - `targetRepo` (`additional/local_stored_collector.go` `AdditionalImagesCollector`) replaces
//!   the source's repository path under the destination; a Windows node asks each mirror
//!   registry for the source's own path (WMCO renders mirrors per registry host), so a target
//!   that does not end with the source path is `mirror-target-moved`.
//! - `targetTag` replaces the tag: a pull by tag asks the mirror for the source's tag
//!   (`mirror-target-moved`); a pull by digest is not affected.

use std::collections::BTreeSet;

use crate::engine::{Finding, ImageReport, Origin, Rule, verdict_of};
use crate::graph::{Content, Graph};
use crate::policy::Policy;
use crate::reference::ImageRef;

/// The findings of what oc-mirror will copy of `reference` (whose source graph is `graph`) for
/// each ImageSetConfiguration entry among `origins`, for the hosts of `policy`.
pub fn predict(
    graph: &Graph,
    reference: &ImageRef,
    policy: &Policy,
    origins: &[Origin],
) -> Vec<Finding> {
    let hosts = policy.hosts();
    let needed: BTreeSet<String> = hosts.iter().map(|h| h.platform.os_arch()).collect();
    let windows_archs: BTreeSet<&str> = (hosts.iter())
        .filter(|h| h.platform.is_windows())
        .map(|h| h.platform.architecture.as_str())
        .collect();
    let mut findings = Vec::new();
    for o in origins {
        let Origin::Imageset {
            path,
            entry,
            platforms,
            target_repo,
            target_tag,
        } = o
        else {
            continue;
        };
        let at = |field: &str| format!("{entry}.{field} in {path}");
        if let Some(f) = dropped(graph, platforms, &needed, &at("platforms")) {
            findings.push(f);
        }
        let ImageRef::Registry(source) = reference else {
            continue;
        };
        let repo = &source.repository;
        if let Some(target) = target_repo.as_ref().filter(|t| {
            !windows_archs.is_empty() && *t != repo && !t.ends_with(&format!("/{repo}"))
        }) {
            findings.push(Finding::new(
                Rule::MirrorTargetMoved,
                format!(
                    "oc-mirror writes it to DESTINATION/{target} ({}), but a Windows node asks \
                     each mirror registry for the source path '{repo}' (WMCO renders mirrors \
                     per registry host, keeping the source path): it will not find it; drop \
                     targetRepo or end it with '/{repo}'",
                    at("targetRepo")
                ),
                None,
            ));
        }
        if let (Some(target), Some(tag), None) = (target_tag, &source.tag, &source.digest) {
            findings.push(Finding::new(
                Rule::MirrorTargetMoved,
                format!(
                    "a pull by tag asks the mirror for ':{tag}', but oc-mirror writes ':{target}' \
                     ({}): reference it by digest or drop targetTag",
                    at("targetTag")
                ),
                None,
            ));
        }
    }
    findings
}

/// Adds the [`predict`] findings to `report` (kept in severity order) and recomputes its
/// verdict: `mirror-check --pre` of an image an ImageSetConfiguration names.
pub fn judge_copy(
    report: &mut ImageReport,
    graph: &Graph,
    reference: &ImageRef,
    policy: &Policy,
    origins: &[Origin],
) {
    let found = predict(graph, reference, policy, origins);
    if found.is_empty() {
        return;
    }
    report.findings.extend(found);
    report.findings.sort_by_key(|f| f.severity);
    report.verdict = verdict_of(&report.findings);
}

/// The `mirror-platform-dropped` finding when `kept` (a non-empty `os/architecture` filter)
/// leaves out entries of the list whose `os/architecture` a host needs (`needed`), naming
/// each entry and the filter items to add.
fn dropped(
    graph: &Graph,
    kept: &[String],
    needed: &BTreeSet<String>,
    field: &str,
) -> Option<Finding> {
    let Content::Index { index, .. } = &graph.root.content else {
        return None;
    };
    if kept.is_empty() {
        return None;
    }
    let mut add = BTreeSet::new();
    let mut lost = Vec::new();
    for p in index.manifests.iter().filter_map(|d| d.platform.as_ref()) {
        let (os, arch, _) = p.normalized();
        let filter_item = format!("{os}/{arch}");
        if !needed.contains(&p.os_arch()) || kept.contains(&filter_item) {
            continue;
        }
        lost.push(match &p.os_version {
            Some(v) => format!("{} {v}", p.os_arch()),
            None if p.is_windows() => format!("{} (no os.version)", p.os_arch()),
            None => p.os_arch(),
        });
        add.insert(format!("{{os: {os}, architecture: {arch}}}"));
    }
    (!lost.is_empty()).then(|| {
        Finding::new(
            Rule::MirrorPlatformDropped,
            format!(
                "oc-mirror will copy only {} of this list ({field}): its entries {} will be left \
                 out, and the nodes of those platforms will find no match; add {} to the \
                 filter, or drop it (an empty filter copies every platform)",
                kept.join(", "),
                lost.join(", "),
                add.into_iter().collect::<Vec<_>>().join(" and ")
            ),
            Some(&graph.root.digest),
        )
    })
}

#[cfg(test)]
mod tests;
