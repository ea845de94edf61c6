//! The flags of the Linux nodes' signature policy, shared by `verify` and `mirror-check`.

use std::path::PathBuf;

use imgcheck::signature::policy::PolicyFiles;

/// The cluster's signature policy, as its Linux nodes (CRI-O, containers/image) apply it.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct SignaturePolicyArgs {
    /// A Linux node's /etc/containers/policy.json (containers-policy.json(5)): predict, for
    /// each pull a Linux node makes, whether CRI-O admits it (Windows nodes enforce no
    /// signature policy).
    #[arg(long = "signature-policy", value_name = "FILE")]
    signature_policy: Option<PathBuf>,
    /// ClusterImagePolicy / ImagePolicy YAML (config.openshift.io/v1 or v1alpha1; repeatable),
    /// rendered onto --signature-policy (default: the policy MCO writes, every image passes)
    /// as the Machine Config Operator renders it.
    #[arg(long = "image-policy", value_name = "FILE")]
    image_policies: Vec<PathBuf>,
    /// A node's /etc/containers/registries.d (registries.d(5)): where use-sigstore-attachments
    /// is set (without it, CRI-O reads no sigstore signature); image policies' scopes and
    /// their mirrors have it, as MCO writes.
    #[arg(long = "registries-d", value_name = "DIR")]
    registries_d: Option<PathBuf>,
}

impl SignaturePolicyArgs {
    /// Whether any of the files is given.
    pub fn given(&self) -> bool {
        self.signature_policy.is_some()
            || !self.image_policies.is_empty()
            || self.registries_d.is_some()
    }

    /// The files, for the library.
    pub fn files(&self) -> PolicyFiles {
        PolicyFiles {
            signature_policy: self.signature_policy.clone(),
            image_policies: self.image_policies.clone(),
            registries_d: self.registries_d.clone(),
        }
    }
}
