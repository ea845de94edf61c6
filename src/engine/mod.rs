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
//! - [`judge_csi_proxy`]: a Windows driver's csi-proxy client against the nodes' CSI Proxy
//!   (`--deep`), with the table of what each CSI Proxy release serves ([`RELEASES`]);
//! - [`judge_signatures`]: the release check of signatures and attestations (`--signatures`).
//!
//! This file only declares and re-exports: the files below import each other, never it.

#[cfg(test)]
pub(crate) mod allocs;
mod binaries;
mod finding;
mod inspect;
mod judge;
mod memo;
mod proxy;
mod resolve;
mod rules;
mod severity;
mod signed;
mod standing;

pub use binaries::{BinaryEntry, CsiProxyUse, GoReport, ProgramReport, REVISION_LABELS, Revision};
pub use finding::{Finding, HostResult, HostStatus, ImageReport, Origin, Verdict, verdict_of};
pub use inspect::{EntryView, InspectView, inspect};
pub use judge::{judge, judge_selection};
pub use proxy::{ProxyRelease, RELEASES, Served, judge_csi_proxy, served};
pub use resolve::{CandidateReport, HostResolution, resolve};
pub use rules::Rule;
pub use severity::Severity;
pub use signed::{SignatureCheck, judge_signatures, signed_subjects};
pub use standing::{SignatureEntry, Standing};
