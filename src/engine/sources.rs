//! What each image of a graph says about the source it was built from: its platform, the
//! revisions (labels, Go `vcs.revision`) and versions (labels, the Go main module's version)
//! it names. A run's driver check (`driver-skew`) compares these across the Linux and Windows
//! halves of one CSI driver; they are read from the configs every run fetches, and from the
//! programs `--deep` reads.

use crate::engine::binaries::{Revision, entry_label, revisions};
use crate::graph::{Graph, Image, LookupOutcome};

/// Labels that name the version an image was built as, in the order they are read (OCI image
/// spec annotations; the `version` label Konflux and OSBS builds set).
pub const VERSION_LABELS: [&str; 2] = ["org.opencontainers.image.version", "version"];

/// One image of a graph and the source it names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntrySource {
    /// The image's OS, from its config (`linux`, `windows`), lower case.
    pub os: String,
    /// The image's platform (`windows/amd64:10.0.17763.1`).
    pub entry: String,
    /// The image manifest's digest.
    pub digest: String,
    /// Every source revision it names.
    pub revisions: Vec<Revision>,
    /// Every version it names (a [`Revision`] whose `revision` is the version).
    pub versions: Vec<Revision>,
}

/// The source every image of `graph` whose config was read names, in graph order.
pub fn sources(graph: &Graph) -> Vec<EntrySource> {
    graph
        .nodes()
        .iter()
        .filter_map(|node| {
            let image = node.image()?;
            let config = image.config.as_ref().ok()?;
            Some(EntrySource {
                os: config.os.to_ascii_lowercase(),
                entry: entry_label(image),
                digest: node.digest.to_string(),
                revisions: revisions(image),
                versions: versions(image),
            })
        })
        .collect()
}

/// Every version an image names: its labels, then each Go program's main module version
/// (`(devel)`, what Go before 1.24 stamps on a build from a checkout, names none).
pub fn versions(image: &Image) -> Vec<Revision> {
    let mut out = Vec::new();
    if let Ok(config) = &image.config {
        for label in VERSION_LABELS {
            if let Some(v) = config.run.labels.get(label).map(|v| v.trim())
                && !v.is_empty()
            {
                out.push(Revision {
                    source: label.to_string(),
                    revision: v.to_string(),
                });
            }
        }
    }
    for program in image.entry.iter().flat_map(|e| &e.programs) {
        if let LookupOutcome::Found { path, binary, .. } = &program.outcome
            && let Some(v) = binary.go.as_ref().and_then(|g| g.main_version.as_ref())
            && !v.is_empty()
            && v != "(devel)"
        {
            out.push(Revision {
                source: format!("go main module version of {path}"),
                revision: v.clone(),
            });
        }
    }
    out
}
