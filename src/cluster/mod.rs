//! What a real cluster runs: the hosts imgcheck judges for, read from the cluster itself
//! instead of typed into a policy, and the images its pod templates use.
//!
//! - [`nodes`]: `oc get nodes -o json` / `kubectl get nodes -o json` into host rows (platform,
//!   runtime profile and the nodes each row stands for).
//! - [`manifests`]: the container images of pod templates (DaemonSets, Deployments, …), with
//!   where each pod can land and whether it runs as a Windows HostProcess container.
//! - [`drivers`]: the Linux and Windows halves of one CSI driver, paired.
//! - [`release`]: an OpenShift release image's component images (`--from-release`).
//! - [`upgrade`]: the runtime each node runs after an upgrade (`verify --upgrade`).
//!
//! A run (`imgcheck::run`) makes these images its targets. Taints, tolerations and the node
//! facts placement reads are [`crate::scheduling`]'s, below the policy that names taints too.

pub mod drivers;
pub mod manifests;
pub mod nodes;
pub mod release;
pub mod upgrade;
