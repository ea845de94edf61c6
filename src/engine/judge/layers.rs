//! Layer findings: foreign/non-distributable layers, and with `--deep` Windows layers outside
//! the Windows layer layout (see `docs/images.md`, "Windows layer format") or that could not
//! be read.

use std::collections::BTreeSet;

use super::content::problem_finding;
use crate::engine::{Finding, Rule};
use crate::graph::{Graph, Layer, LayerFormat, Node};

/// Findings for the layers of every image of the graph; a foreign layer shared by several
/// images is reported once.
pub(super) fn findings(graph: &Graph) -> Vec<Finding> {
    let mut foreign_seen = BTreeSet::new();
    let mut findings = Vec::new();
    for node in graph.nodes() {
        let Some(img) = node.image() else { continue };
        for layer in &img.layers {
            let d = &layer.descriptor;
            if d.is_foreign_layer() && foreign_seen.insert(d.digest.clone()) {
                findings.push(foreign_layer(node, layer));
            }
            findings.extend(format_finding(node, layer));
        }
    }
    findings
}

/// A layer mirrors leave out.
fn foreign_layer(node: &Node, layer: &Layer) -> Finding {
    let d = &layer.descriptor;
    let served = d
        .urls
        .first()
        .map_or(String::new(), |u| format!(", served from {u}"));
    let message = format!(
        "layer {} ({}) of {} is foreign/non-distributable{served}: mirrors leave it out",
        d.digest,
        d.media_type,
        node.digest.short(),
    );
    Finding::new(Rule::ForeignLayer, message, d.digest().ok().as_ref())
}

/// What `--deep` found wrong with a layer of image `node`, if anything.
fn format_finding(node: &Node, layer: &Layer) -> Option<Finding> {
    let d = &layer.descriptor;
    match layer.format.as_ref()? {
        LayerFormat::NotWindows { outside, examples } => {
            let message = format!(
                "layer {} of windows image {} has {outside} entries outside Files/ and Hives/ (e.g. {}): Windows cannot use it",
                d.digest,
                node.digest.short(),
                examples.join(", ")
            );
            Some(Finding::new(
                Rule::WindowsLayerFormat,
                message,
                d.digest().ok().as_ref(),
            ))
        }
        LayerFormat::Failed(p) => Some(problem_finding("layer", &d.digest().ok()?, p)),
        LayerFormat::Windows | LayerFormat::Skipped(_) => None,
    }
}
