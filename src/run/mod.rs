//! A run: what the command line's `verify` does, for any Rust caller. Plain [`Inputs`]
//! (references, lists, ImageSets, a release, pod templates, nodes, the policy) become
//! [`Target`]s with their scope and origins, fetched through one session and judged into
//! reports ([`Verified`]), with the notes and request counters the command line prints. The
//! library never prints: a [`Progress`] hears each note and each image as it is done.
//!
//! The steps, for callers that need them apart (the command line makes its connection after
//! the local inputs are read; the mirror gate checks the images its own way):
//! [`Inputs::plan`] reads the local inputs, [`RunPlan::gather`] reads the release and makes one
//! target per image, [`Gathered::verify`] (or the caller, then [`Gathered::finish`]) checks
//! them; [`RunPlan::verify`] does the last two.
//!
//! A whole catalog in constant memory: [`RunPlan::verify_into`] and [`Gathered::verify_into`]
//! hand each report to a [`ReportSink`] in input order as soon as its turn comes (the command line
//! writes it out then) and keep none; [`Gathered::verify`] is the same run with a sink that
//! keeps them all.
//!
//! Verify a release's components for the nodes of a cluster:
//!
//! ```no_run
//! use imgcheck::auth::AuthStore;
//! use imgcheck::run::{Connection, Inputs, ReleaseInput};
//! use imgcheck::source::registry::ClientOptions;
//!
//! # async fn example() -> Result<(), Box<dyn std::error::Error>> {
//! let inputs = Inputs {
//!     release: Some(ReleaseInput {
//!         reference: "quay.io/openshift-release-dev/ocp-release:4.18.0-multi".into(),
//!         components: vec![], // the policy's release.components
//!     }),
//!     nodes: Some("nodes.json".into()), // oc get nodes -o json
//!     ..Inputs::default()
//! };
//! let connection = Connection {
//!     options: ClientOptions::default(),
//!     auth: AuthStore::load(None)?,
//! };
//! let verified = inputs.verify(connection, &()).await?;
//! for report in &verified.reports {
//!     println!("{} {:?}", report.reference, report.verdict);
//! }
//! # Ok(())
//! # }
//! ```

mod bounded;
mod csiproxy;
mod drivers;
mod error;
mod gate;
mod gather;
mod inputs;
mod outcome;
mod progress;
mod sink;
mod targets;
mod upgrade;
mod verify;

pub use bounded::run_bounded;
pub use error::RunError;
pub use gate::{GateInputs, GatePlan, MirrorFiles};
pub use gather::{Connection, Finished, Gathered, RunPlan, Verified};
pub use inputs::{Inputs, ReleaseInput};
pub use outcome::Outcome;
pub use progress::{Note, Progress};
pub use sink::{Delivery, ReportSink};
pub use targets::{
    MERGE_CHECK_EVERY, MergeOverdue, Scope, Target, from_manifests, from_release, host_labels,
    merge,
};
pub use verify::{Settings, verify_all};
