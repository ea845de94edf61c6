//! `--deep` findings about the program each image runs (see `docs/images.md`, "The entry's
//! program"): it is missing (`entrypoint-missing`), built for another platform
//! (`binary-platform-mismatch`), imports DLLs the image lacks (`dll-missing`), or could not
//! be told (`layer-not-checked`); and across the entries of a list, source revisions that
//! disagree (`source-skew`) or are absent (`no-source-revision`).

use crate::engine::binaries::{Revision, entry_label, revisions};
use crate::engine::drivers::same_revision;
use crate::engine::finding::Finding;
use crate::engine::rules::Rule;
use crate::engine::severity::Severity;
use crate::graph::{Content, Graph, Image, LookupOutcome, Node, Program};
use crate::policy::{Policy, SkewSeverity};

/// Findings about the programs of every image read with `--deep`, then the list's sources.
pub(super) fn findings(graph: &Graph, policy: &Policy) -> Vec<Finding> {
    let mut findings = Vec::new();
    for node in graph.nodes() {
        let Some(image) = node.image() else { continue };
        let Some(entry) = &image.entry else { continue };
        for program in &entry.programs {
            findings.extend(program_findings(node, image, program));
        }
    }
    findings.extend(source_findings(graph, policy));
    findings
}

/// The subject of a message: `windows/amd64:10.0.17763.1 entry sha256:abc…`.
fn subject(node: &Node, image: &Image) -> String {
    format!("{} entry {}", entry_label(image), node.digest.short())
}

/// What is wrong with one program of an image, if anything.
fn program_findings(node: &Node, image: &Image, program: &Program) -> Vec<Finding> {
    let who = subject(node, image);
    let digest = Some(&node.digest);
    match &program.outcome {
        LookupOutcome::Missing => vec![Finding::new(
            Rule::EntrypointMissing,
            format!(
                "{who} runs {}, which none of its layers holds (looked up: {})",
                program.name,
                looked_up(program)
            ),
            digest,
        )],
        LookupOutcome::CannotRun(why) => vec![Finding::new(
            Rule::EntrypointMissing,
            format!(
                "{who} runs {}, which cannot be started: {why}",
                program.name
            ),
            digest,
        )],
        LookupOutcome::NotChecked(why) => vec![Finding::new(
            Rule::LayerNotChecked,
            format!("{who} runs {}, which was not checked: {why}", program.name),
            digest,
        )],
        LookupOutcome::Found { path, binary, dlls } => {
            let mut out = Vec::new();
            let Ok(config) = &image.config else {
                return out;
            };
            let variant = config.variant.as_deref().filter(|v| !v.is_empty());
            let os = config.os.to_ascii_lowercase();
            if let Some(why) = binary.platform_mismatch(&os, &config.architecture, variant) {
                out.push(Finding::new(
                    Rule::BinaryPlatformMismatch,
                    format!("{who} runs {path}: {why}"),
                    digest,
                ));
            }
            match dlls {
                Some(Ok(missing)) if !missing.is_empty() => out.push(Finding::new(
                    Rule::DllMissing,
                    format!(
                        "{who} runs {path}, which imports {} that the image does not provide \
                         (not next to the program, in its working directory, the Windows \
                         system directories or PATH)",
                        missing.join(", ")
                    ),
                    digest,
                )),
                Some(Err(why)) => out.push(Finding::new(
                    Rule::LayerNotChecked,
                    format!("{who} runs {path}, whose DLL imports were not checked: {why}"),
                    digest,
                )),
                _ => {}
            }
            out
        }
    }
}

fn looked_up(program: &Program) -> String {
    if program.looked_up.is_empty() {
        return "nothing: no PATH to search".to_string();
    }
    program.looked_up.join(", ")
}

/// The runnable entries of the top list (the images it names directly; attestations are
/// never fetched), when the graph was read with `--deep`.
fn list_entries(graph: &Graph) -> Vec<(&Node, &Image)> {
    let Content::Index { children, .. } = &graph.root.content else {
        return vec![];
    };
    let entries: Vec<(&Node, &Image)> = children
        .iter()
        .flatten()
        .filter_map(|n| n.image().map(|i| (n, i)))
        .filter(|(_, i)| i.config.is_ok())
        .collect();
    let deep = graph
        .nodes()
        .iter()
        .any(|n| n.image().is_some_and(|i| i.entry.is_some()));
    if deep { entries } else { vec![] }
}

/// `source-skew` when the revisions the entries name disagree; `no-source-revision` for the
/// entries that name none.
fn source_findings(graph: &Graph, policy: &Policy) -> Vec<Finding> {
    let entries = list_entries(graph);
    let claims: Vec<(String, Vec<Revision>)> = entries
        .iter()
        .map(|(n, i)| (subject(n, i), revisions(i)))
        .collect();
    let mut out = Vec::new();
    let all: Vec<&Revision> = claims.iter().flat_map(|(_, r)| r).collect();
    let disagree = all
        .iter()
        .any(|a| all.iter().any(|b| !same_revision(&a.revision, &b.revision)));
    if disagree {
        let named: Vec<String> = claims
            .iter()
            .filter(|(_, r)| !r.is_empty())
            .map(|(who, revs)| {
                let revs: Vec<String> = revs
                    .iter()
                    .map(|r| format!("{} ({})", r.revision, r.source))
                    .collect();
                format!("{who}: {}", revs.join(", "))
            })
            .collect();
        let mut finding = Finding::new(
            Rule::SourceSkew,
            format!(
                "the entries of the list come from different source revisions: {}",
                named.join("; ")
            ),
            Some(&graph.root.digest),
        );
        if policy.source_skew == Some(SkewSeverity::Error) {
            finding.severity = Severity::Error;
        }
        out.push(finding);
    }
    let bare: Vec<&str> = claims
        .iter()
        .filter(|(_, r)| r.is_empty())
        .map(|(who, _)| who.as_str())
        .collect();
    if !bare.is_empty() {
        out.push(Finding::new(
            Rule::NoSourceRevision,
            format!(
                "{} of {} entries name no source revision (no {} label, no Go vcs.revision): {}",
                bare.len(),
                claims.len(),
                crate::engine::binaries::REVISION_LABELS.join(" / "),
                bare.join(", ")
            ),
            Some(&graph.root.digest),
        ));
    }
    out
}

#[cfg(test)]
mod tests;
