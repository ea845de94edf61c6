//! The images of `verify` and `mirror-check`: typed and listed references, a release
//! payload's components (`--from-release`), the images of pod templates (`--from-manifests`).

use imgcheck::batch::Target;
use imgcheck::cluster::{manifests, targets};
use imgcheck::engine::ImageReport;
use imgcheck::policy::Policy;

use super::{CliError, GlobalArgs, RefInput, output};

/// What a run verifies: targets to fetch and judge, and reports already made (release
/// components the payload lacks).
pub struct Gathered {
    /// The images to judge, one per reference.
    pub targets: Vec<Target>,
    /// Failing reports of components the release lacks.
    pub missing: Vec<ImageReport>,
}

impl RefInput {
    /// Every image the inputs name, at least one.
    pub async fn gather(
        &self,
        _global: &GlobalArgs,
        policy: &Policy,
        _jobs: usize,
    ) -> Result<Gathered, CliError> {
        let mut all: Vec<Target> = self.collect()?.into_iter().map(Target::plain).collect();
        let missing = Vec::new();
        if let Some(path) = &self.from_manifests {
            let uses = manifests::read_manifests(path)?;
            note_undecided(&uses);
            all.extend(targets::from_manifests(&uses, policy));
        }
        if all.is_empty() && missing.is_empty() {
            return Err(CliError::NoReferences);
        }
        Ok(Gathered {
            targets: targets::merge(all),
            missing,
        })
    }
}

/// Says once per label key that placement on it could not be decided from host rows.
fn note_undecided(uses: &[manifests::ImageUse]) {
    let keys: std::collections::BTreeSet<String> = uses
        .iter()
        .flat_map(|u| u.placement.undecided_keys())
        .collect();
    for key in keys {
        output::eprintln(format_args!(
            "imgcheck: note: pod placement on the node label '{key}' cannot be decided from \
             host rows: it does not narrow the hosts judged"
        ));
    }
}
