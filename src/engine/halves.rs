//! The halves of one CSI driver as a run found them ([`DriverHalf`], [`DriverStage`]): the
//! Linux and the Windows node plugin, where each was found, its image and the source revisions
//! and versions that image names. Judged in `drivers.rs`; shown in a driver report's origin.

use serde::Serialize;

use super::binaries::Revision;
use super::sources::EntrySource;

/// `linux` or `windows`.
pub type HalfOs = &'static str;

/// One half of a driver: where it was found, its image and the source that image names.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct DriverHalf {
    /// `linux` or `windows`.
    pub os: HalfOs,
    /// Where it was found: `DaemonSet NS/NAME container C`, `release V component C`.
    pub from: String,
    /// The image, as the workload or release names it.
    pub image: String,
    /// Whether the image was read (a half whose image could not be fetched names nothing).
    pub read: bool,
    /// The source revisions the image's entries of this OS name.
    pub revisions: Vec<Revision>,
    /// The versions they name.
    pub versions: Vec<Revision>,
}

impl DriverHalf {
    /// The half of OS `os` found at `from` with image `image`, its source read from the
    /// entries of that OS among `sources` (`None`: the image was not read).
    pub fn new(os: HalfOs, from: String, image: String, sources: Option<&[EntrySource]>) -> Self {
        let mine = || sources.into_iter().flatten().filter(|s| s.os == os);
        let mut half = DriverHalf {
            os,
            from,
            image,
            read: sources.is_some(),
            revisions: vec![],
            versions: vec![],
        };
        for s in mine() {
            push_new(&mut half.revisions, &s.revisions);
            push_new(&mut half.versions, &s.versions);
        }
        half
    }

    /// `Linux half quay.io/x:1 (DaemonSet ns/x-node container csi-driver)`.
    pub(super) fn name(&self) -> String {
        let os = match self.os {
            "windows" => "Windows",
            _ => "Linux",
        };
        format!("{os} half {} ({})", self.image, self.from)
    }
}

/// Adds the claims of `more` that `into` does not hold yet.
fn push_new(into: &mut Vec<Revision>, more: &[Revision]) {
    for r in more {
        if !into.contains(r) {
            into.push(r.clone());
        }
    }
}

/// Both halves at one stage: `current` (the cluster's pod templates) or `target` (the
/// release).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct DriverStage {
    /// `current` or `target`.
    pub stage: &'static str,
    /// The Linux node plugin.
    pub linux: DriverHalf,
    /// The Windows node plugin.
    pub windows: DriverHalf,
}
