//! Helpers shared by the mirror unit tests: fixture graphs from the OCI layouts in
//! `fixtures/layouts`, references, and the one place findings are compared by rule.

use std::path::Path;

use super::config::MirrorConfig;
use super::gather::{BlobPresence, layers};
use crate::engine::{Finding, Rule};
use crate::graph::{Graph, WalkOptions, walk};
use crate::reference::{ImageRef, LayoutRef, RegistryRef};
use crate::source::layout::LayoutSource;

/// The graph of `fixtures/layouts/<name>` at tag `latest`, walked through the layout source.
pub async fn fixture(name: &str) -> Graph {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/layouts")
        .join(name);
    let source = LayoutSource::open(&LayoutRef {
        dir,
        tag: Some("latest".into()),
        digest: None,
    })
    .unwrap();
    walk(&source, WalkOptions::default()).await.unwrap()
}

/// A registry reference, parsed.
pub fn reg(s: &str) -> RegistryRef {
    match s.parse::<ImageRef>() {
        Ok(ImageRef::Registry(r)) => r,
        other => panic!("{s}: {other:?}"),
    }
}

/// The rule id of each finding, in order.
pub fn ids(findings: &[Finding]) -> Vec<&'static str> {
    findings.iter().map(|f| f.rule.id()).collect()
}

/// The ids of `rules`, in order: what [`ids`] gives for findings of those rules.
pub fn rule_ids(rules: &[Rule]) -> Vec<&'static str> {
    rules.iter().map(|r| r.id()).collect()
}

/// Every layer blob of `graph` held by the mirror.
pub fn all_present(graph: &Graph) -> BlobPresence {
    layers(graph)
        .into_iter()
        .map(|d| (d.digest, Ok(true)))
        .collect()
}

/// The mirror configuration of the evidence tables: digest mirrors for `q.io/open`,
/// `q.io/closed` (source blocked) and `q.io/two` (two mirrors), tag mirrors for `q.io/tags`.
pub fn config() -> MirrorConfig {
    let mut c = MirrorConfig::default();
    c.add_mirror_sets(
        Path::new("s.yaml"),
        "apiVersion: config.openshift.io/v1\nkind: ImageDigestMirrorSet\nmetadata: {name: d}\n\
         spec:\n  imageDigestMirrors:\n  - source: q.io/open\n    mirrors: [m.local/open]\n  \
         - source: q.io/closed\n    mirrors: [m.local/closed]\n    mirrorSourcePolicy: NeverContactSource\n  \
         - source: q.io/two\n    mirrors: [a.local/two, b.local/two]\n\
         ---\napiVersion: config.openshift.io/v1\nkind: ImageTagMirrorSet\nmetadata: {name: t}\n\
         spec:\n  imageTagMirrors:\n  - source: q.io/tags\n    mirrors: [t.local/tags]\n",
    )
    .unwrap();
    c
}
