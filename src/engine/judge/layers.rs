//! Layer findings: foreign/non-distributable layers, and with `--deep` Windows layers outside
//! the Windows layer layout (see `docs/images.md`, "Windows layer format") or that could not
//! be read.

use std::collections::BTreeSet;

use super::content::problem_finding;
use crate::engine::finding::Finding;
use crate::engine::rules::Rule;
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
        LayerFormat::NotChecked(why) => Some(Finding::new(
            Rule::LayerNotChecked,
            format!(
                "layer {} of windows image {} was not checked ({why}): its format is unknown",
                d.digest,
                node.digest.short()
            ),
            d.digest().ok().as_ref(),
        )),
        LayerFormat::Windows | LayerFormat::Skipped(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::{Content, Problem};
    use crate::manifest::{DOCKER_FOREIGN_LAYER, Descriptor};

    const D: &str = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

    fn image_node() -> Node {
        Node {
            digest: D.parse().unwrap(),
            media_type: String::new(),
            content: Content::Schema1,
            served: None,
        }
    }

    fn layer(media_type: &str, urls: &[&str], format: Option<LayerFormat>) -> Layer {
        Layer {
            descriptor: Descriptor {
                media_type: media_type.into(),
                digest: D.into(),
                size: 1,
                platform: None,
                annotations: Default::default(),
                urls: urls.iter().map(ToString::to_string).collect(),
            },
            format,
        }
    }

    #[test]
    fn foreign_layers_say_where_they_are_served_from() {
        let cases = [
            (
                vec!["https://mcr.microsoft.com/x"],
                ", served from https://mcr.microsoft.com/x: mirrors",
            ),
            (vec![], "is foreign/non-distributable: mirrors leave it out"),
        ];
        for (urls, want) in cases {
            let f = foreign_layer(&image_node(), &layer(DOCKER_FOREIGN_LAYER, &urls, None));
            assert_eq!(f.rule, Rule::ForeignLayer);
            assert!(f.message.contains(want), "{}", f.message);
        }
    }

    #[test]
    fn deep_results_per_format() {
        let outside = LayerFormat::NotWindows {
            outside: 2,
            examples: vec!["csi.exe".into(), "x".into()],
        };
        let cases = [
            (
                Some(outside),
                Some(Rule::WindowsLayerFormat),
                "has 2 entries outside Files/ and Hives/ (e.g. csi.exe, x)",
            ),
            (
                Some(LayerFormat::Failed(Problem::Missing("gone".into()))),
                Some(Rule::ChildMissing),
                "layer sha256:",
            ),
            (
                Some(LayerFormat::Failed(Problem::Bad("not a tar".into()))),
                Some(Rule::BadManifest),
                "unusable: not a tar",
            ),
            (
                Some(LayerFormat::NotChecked("foreign layer".into())),
                Some(Rule::LayerNotChecked),
                "was not checked (foreign layer): its format is unknown",
            ),
            (Some(LayerFormat::Windows), None, ""),
            (Some(LayerFormat::Skipped("empty layer".into())), None, ""),
            (None, None, ""),
        ];
        for (format, rule, want) in cases {
            let got = format_finding(&image_node(), &layer("tar", &[], format.clone()));
            assert_eq!(got.as_ref().map(|f| f.rule), rule, "{format:?}");
            let message = got.map(|f| f.message).unwrap_or_default();
            assert!(message.contains(want), "{message}");
        }
    }
}
