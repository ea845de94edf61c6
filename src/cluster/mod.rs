//! What a real cluster runs: the hosts imgcheck judges for, read from the cluster itself
//! instead of typed into a policy.
//!
//! - [`nodes`]: `oc get nodes -o json` / `kubectl get nodes -o json` into host rows (platform,
//!   runtime profile and the nodes each row stands for).
//! - [`release`]: an OpenShift release image's component images (`--from-release`).

pub mod nodes;
pub mod release;
