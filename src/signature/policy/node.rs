//! A node's signature policy as read from the command line: policy.json, the image policies
//! rendered onto it, registries.d.

use std::path::{Path, PathBuf};

use super::admit::{Admission, SignedPull, admit};
use super::document::{PolicyRequirement, SignaturePolicy, parse_policy};
use super::image_policy::{MCO_DEFAULT_POLICY, render_image_policies};
use super::registries_d::RegistriesD;
use super::scope::requirements_for;
use crate::input::InputError;

/// The largest policy file read.
const MAX_POLICY_BYTES: u64 = 4 * 1024 * 1024;

/// A node's signature policy and registries.d, as read from the command line.
#[derive(Debug, Clone)]
pub struct NodeSignaturePolicy {
    /// policy.json, with the image policies rendered onto it.
    pub policy: SignaturePolicy,
    /// registries.d, with the image policies' scopes.
    pub registries: RegistriesD,
}

/// Where a node's signature policy comes from (`--signature-policy`, `--image-policy`,
/// `--registries-d`).
#[derive(Debug, Clone, Default)]
pub struct PolicyFiles {
    /// A containers-policy.json(5) file; none: MCO's default (every image passes).
    pub signature_policy: Option<PathBuf>,
    /// ClusterImagePolicy / ImagePolicy YAML files, rendered onto it.
    pub image_policies: Vec<PathBuf>,
    /// A registries.d directory.
    pub registries_d: Option<PathBuf>,
}

impl PolicyFiles {
    /// Nothing given: no prediction.
    pub fn is_empty(&self) -> bool {
        self.signature_policy.is_none() && self.image_policies.is_empty()
    }

    /// Reads them (bounded); each error names its flag and file.
    pub fn load(&self) -> Result<Option<NodeSignaturePolicy>, InputError> {
        if self.is_empty() {
            return match &self.registries_d {
                Some(dir) => Err(InputError::new(
                    format!("--registries-d {}", dir.display()),
                    "needs --signature-policy or --image-policy: registries.d alone decides nothing",
                )),
                None => Ok(None),
            };
        }
        let mut policy = match &self.signature_policy {
            Some(path) => {
                let origin = format!("--signature-policy {}", path.display());
                parse_policy(&read(path, &origin)?).map_err(|e| InputError::new(origin, e))?
            }
            None => parse_policy(MCO_DEFAULT_POLICY).expect("the embedded policy parses"),
        };
        let mut registries = match &self.registries_d {
            Some(dir) => RegistriesD::load(dir)?,
            None => RegistriesD::default(),
        };
        for path in &self.image_policies {
            let origin = format!("--image-policy {}", path.display());
            let text = read(path, &origin)?;
            match render_image_policies(&text, &mut policy, &mut registries) {
                Ok(0) => return Err(InputError::new(origin, "holds no image policy")),
                Ok(_) => {}
                Err(e) => return Err(InputError::new(origin, e)),
            }
        }
        Ok(Some(NodeSignaturePolicy { policy, registries }))
    }
}

/// The text of `path`, bounded.
fn read(path: &Path, origin: &str) -> Result<String, InputError> {
    crate::input::read_file(path, MAX_POLICY_BYTES).map_err(|e| {
        let err = InputError::new(origin, e.reason);
        match e.source {
            Some(io) => err.caused_by(io),
            None => err,
        }
    })
}

impl NodeSignaturePolicy {
    /// Does the scope of `logical` require sigstore signatures (so they must be read)?
    pub fn reads_signatures(&self, logical: &crate::reference::RegistryRef) -> bool {
        let (_, requirements) = requirements_for(&self.policy, logical);
        (requirements.iter()).any(|r| matches!(r, PolicyRequirement::SigstoreSigned(_)))
    }

    /// The decision for `pull`, from the signatures read from its physical repository.
    pub fn admit(
        &self,
        pull: SignedPull<'_>,
        signatures: &[Result<crate::signature::Stored, String>],
    ) -> Admission {
        admit(&self.policy, &self.registries, pull, signatures)
    }
}
