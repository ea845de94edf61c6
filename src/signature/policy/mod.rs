//! The cluster side of signatures: would a Linux node's CRI-O admit a pull under the
//! cluster's signature policy? CRI-O decides with containers/image, from
//! `/etc/containers/policy.json` (containers-policy.json(5)) and
//! `/etc/containers/registries.d` (registries.d(5)), which the Machine Config Operator
//! renders from `ClusterImagePolicy`/`ImagePolicy`. Windows nodes (containerd) enforce no
//! signature policy.
//!
//! - `document`: policy.json parsed; `image_policy`: ClusterImagePolicy/ImagePolicy rendered
//!   as MCO renders them; `registries_d`: where signatures are read;
//! - `scope`: which scope applies; `identity`: `signedIdentity` matching;
//! - `admit`: the decision for one pull, from the signatures stored where it is pulled from;
//!   `pulls`: the decisions for the Linux pulls of a report, the signatures read.

mod admit;
mod document;
mod identity;
mod image_policy;
mod node;
mod pulls;
mod registries_d;
mod scope;

pub use admit::{Admission, PullDecision, SignedPull, admit};
pub use document::{
    PolicyRequirement, SignaturePolicy, SignedIdentity, Sigstore, SigstoreRoot, parse_policy,
};
pub use identity::identity_matches;
pub use image_policy::{MCO_DEFAULT_POLICY, render_image_policies};
pub use node::{NodeSignaturePolicy, PolicyFiles};
pub use pulls::{check_admission, not_from_a_registry};
pub use registries_d::RegistriesD;
pub use scope::{policy_identity, policy_namespaces, requirements_for};

#[cfg(test)]
mod tests;
