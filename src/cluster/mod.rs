//! What a real cluster runs: the hosts imgcheck judges for, read from the cluster itself
//! instead of typed into a policy.
//!
//! - [`nodes`]: `oc get nodes -o json` / `kubectl get nodes -o json` into host rows (platform,
//!   runtime profile and the nodes each row stands for).

pub mod nodes;
