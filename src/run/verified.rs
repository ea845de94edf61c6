//! What a run returns.

use super::progress::Note;
use crate::engine::ImageReport;

/// The result of a run: one report per image, in input order (then the release components
/// the payload lacks), the notes about its inputs and its registry request counters.
#[derive(Debug)]
pub struct Verified {
    /// The reports.
    pub reports: Vec<ImageReport>,
    /// Notes about the inputs (also told to the run's [`Progress`](super::Progress)).
    pub notes: Vec<Note>,
    /// Request counters of checking the images (`None`: no registry was contacted).
    pub stats: Option<String>,
    /// Request counters of reading the release (`--from-release`), when it was read from a
    /// registry.
    pub release_stats: Option<String>,
}
