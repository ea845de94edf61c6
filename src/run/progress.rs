//! What a run tells its caller as it goes: notes about the inputs, and each image as it is
//! done. The library never prints; the command line draws its progress bar and prints the
//! notes on standard error.

use super::outcome::Outcome;

/// Something about a run's inputs that is not a report: told as it arises (before any image
/// is checked) and returned with the reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Note {
    /// A section of an ImageSetConfiguration imgcheck does not check (a warning).
    ImagesetUnread(String),
    /// A node runtime version judged with the nearest profile (`--nodes`).
    NodeRuntime(String),
    /// A workload's pods are kept off hosts or nodes its labels would take, by a taint it
    /// does not tolerate or a cordon (`--from-manifests`).
    KeptOff(String),
    /// Pod placement on this node label cannot be decided from host rows
    /// (`--from-manifests`): it does not narrow the hosts judged.
    UndecidedLabel(String),
    /// The CSI Proxy release the Windows nodes run, learned from the csi-proxy DaemonSet
    /// (`--from-manifests --deep`), or why it was not.
    CsiProxy(String),
}

impl Note {
    /// A warning (something the user asked for is not checked), not just a note.
    pub fn is_warning(&self) -> bool {
        matches!(self, Note::ImagesetUnread(_))
    }
}

impl std::fmt::Display for Note {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Note::ImagesetUnread(line)
            | Note::NodeRuntime(line)
            | Note::KeptOff(line)
            | Note::CsiProxy(line) => f.write_str(line),
            Note::UndecidedLabel(key) => write!(
                f,
                "pod placement on the node label '{key}' cannot be decided from host rows: it \
                 does not narrow the hosts judged"
            ),
        }
    }
}

/// Follows a run: the command line implements it to print notes and draw its progress bar;
/// `()` follows nothing.
pub trait Progress: Sync {
    /// A note about the inputs, as it arises.
    fn note(&self, _note: &Note) {}

    /// The run starts on one of its inputs: `what` says which ("reading --nodes FILE").
    fn reading(&self, _what: &str) {}

    /// The run starts checking `images` images.
    fn start(&self, _images: usize) {}

    /// One image is done (called as each finishes, in any order).
    fn done(&self, _outcome: &Outcome) {}
}

impl Progress for () {}
