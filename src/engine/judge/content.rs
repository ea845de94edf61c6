//! Content findings: objects of the graph that are missing, corrupt, unparsable or schema1,
//! and image configs that could not be read.

use crate::digest::Digest;
use crate::engine::finding::Finding;
use crate::engine::rules::Rule;
use crate::graph::{Content, Graph, Node, Problem};

/// A finding for every object of the graph that cannot be judged.
pub(super) fn findings(graph: &Graph) -> Vec<Finding> {
    graph
        .nodes()
        .into_iter()
        .filter_map(|node| node_finding(node, std::ptr::eq(node, &graph.root)))
        .collect()
}

/// What is wrong with one node's own content, if anything.
fn node_finding(node: &Node, is_root: bool) -> Option<Finding> {
    match &node.content {
        Content::Problem(p) => {
            let what = if is_root {
                "manifest"
            } else {
                "child manifest"
            };
            Some(problem_finding(what, &node.digest, p))
        }
        Content::Schema1 => Some(Finding::new(
            Rule::Schema1,
            format!("{} is an obsolete Docker schema1 manifest", node.digest),
            Some(&node.digest),
        )),
        Content::Image(img) => {
            let problem = img.config.as_ref().err()?;
            let config = img.manifest.config.digest().ok()?;
            let what = format!("config of {}", node.digest.short());
            Some(problem_finding(&what, &config, problem))
        }
        Content::Index { .. } => None,
    }
}

/// The finding for a [`Problem`] with the object `what` (`manifest`, `layer`, …) at `digest`.
pub(super) fn problem_finding(what: &str, digest: &Digest, p: &Problem) -> Finding {
    let (rule, message) = match p {
        Problem::Missing(m) => (
            Rule::ChildMissing,
            format!("{what} {digest} does not exist ({m})"),
        ),
        Problem::DigestMismatch(m) => (Rule::DigestMismatch, format!("{what}: {m}")),
        Problem::Bad(m) => (
            Rule::BadManifest,
            format!("{what} {digest} is unusable: {m}"),
        ),
        Problem::Unavailable(m) => (
            Rule::FetchError,
            format!("{what} {digest} could not be fetched: {m}"),
        ),
    };
    Finding::new(rule, message, Some(digest))
}

#[cfg(test)]
mod tests {
    use super::*;

    const D: &str = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

    #[test]
    fn each_problem_has_its_rule_and_message() {
        let d: Digest = D.parse().unwrap();
        let cases = [
            (
                Problem::Missing("gone".into()),
                Rule::ChildMissing,
                format!("layer {D} does not exist (gone)"),
            ),
            (
                Problem::DigestMismatch("hashes to x".into()),
                Rule::DigestMismatch,
                "layer: hashes to x".to_string(),
            ),
            (
                Problem::Bad("not JSON".into()),
                Rule::BadManifest,
                format!("layer {D} is unusable: not JSON"),
            ),
            (
                Problem::Unavailable("timeout".into()),
                Rule::FetchError,
                format!("layer {D} could not be fetched: timeout"),
            ),
        ];
        for (problem, rule, message) in cases {
            let f = problem_finding("layer", &d, &problem);
            assert_eq!((f.rule, f.message.as_str()), (rule, message.as_str()));
            assert_eq!(f.digest.as_deref(), Some(D));
            assert_eq!(f.severity, rule.severity());
        }
    }

    #[test]
    fn root_and_children_are_named_apart() {
        let node = |content| Node {
            digest: D.parse().unwrap(),
            media_type: String::new(),
            content,
            served: None,
        };
        let cases = [
            (
                node(Content::Schema1),
                true,
                Some(Rule::Schema1),
                "obsolete",
            ),
            (
                node(Content::Problem(Problem::Missing("m".into()))),
                true,
                Some(Rule::ChildMissing),
                "manifest sha256:",
            ),
            (
                node(Content::Problem(Problem::Missing("m".into()))),
                false,
                Some(Rule::ChildMissing),
                "child manifest sha256:",
            ),
        ];
        for (n, is_root, rule, starts) in cases {
            let f = node_finding(&n, is_root);
            assert_eq!(f.as_ref().map(|f| f.rule), rule);
            let message = f.map(|f| f.message).unwrap_or_default();
            assert!(
                message.starts_with(starts) || message.contains(starts),
                "{message}"
            );
        }
    }
}
