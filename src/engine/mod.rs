//! The verify rules: a pure function from a verified [`Graph`](crate::graph::Graph), a
//! [`Policy`](crate::policy::Policy) and runtime profiles to [`Finding`]s, a host matrix and a
//! [`Verdict`].
//!
//! - [`Rule`]: the one table of rules (id, severity, hint); [`Severity`];
//! - [`Finding`], [`Verdict`], [`HostResult`], [`HostStatus`], [`ImageReport`]: what judging
//!   produces;
//! - [`resolve`]: which manifest one host pulls, with every candidate's story;
//! - [`judge`]: the findings of one graph (content, host matrix, entries, layers);
//! - [`BinaryEntry`]: the `binaries` block of a report (`--deep`);
//! - [`inspect`]: the entries of a graph as `inspect` shows them (rendered by `report`);
//! - [`EntrySource`]: the source revision and version each image names (`driver-skew`);
//! - [`judge_driver`]: the Linux and Windows halves of one CSI driver (`driver-skew`);
//! - [`admission_finding`]: what a Linux node's signature policy decides for a pull;
//! - [`judge_csi_proxy`]: a Windows driver's csi-proxy client against the nodes' CSI Proxy
//!   (`--deep`), with the table of what each CSI Proxy release serves ([`RELEASES`]);
//! - [`NodePlacement`], [`RunExtras`]: what a run's report carries besides its images (the
//!   per-node answer, notes, the nodes' runtimes), made by `run`, rendered by `report`.
//!
//! This file only declares and re-exports: the files below import each other, never it.

mod admitted;
#[cfg(test)]
pub(crate) mod allocs;
mod binaries;
mod drivers;
mod finding;
mod halves;
mod inspect;
mod judge;
mod memo;
mod placement;
mod proxy;
mod resolve;
mod rules;
mod severity;
mod sources;
mod standing;

pub use admitted::admission_finding;
pub use binaries::{BinaryEntry, CsiProxyUse, GoReport, ProgramReport, REVISION_LABELS, Revision};
pub use drivers::{DriverCheck, judge_driver};
pub use finding::{Finding, HostResult, HostStatus, ImageReport, Origin, Verdict, verdict_of};
pub use halves::{DriverHalf, DriverStage, HalfOs};
pub use inspect::{EntryView, InspectView, inspect};
pub use judge::{judge, judge_selection};
pub use placement::{NodePlacement, RunExtras};
pub use proxy::{ProxyRelease, RELEASES, Served, judge_csi_proxy, served};
pub use resolve::{CandidateReport, HostResolution, resolve};
pub use rules::Rule;
pub use severity::Severity;
pub use sources::{EntrySource, VERSION_LABELS, sources, versions};
pub use standing::{AdmissionEntry, Place, SignatureEntry, Standing};
