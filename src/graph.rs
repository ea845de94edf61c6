//! The verified image graph: index → child manifests → configs (→ layers with `--deep`).
//!
//! The walk fetches children concurrently (bounded), checks every object's bytes against the
//! digest and size that named them, and records what it could not get as a [`Problem`] on the
//! node instead of failing: judging is the engine's job.
//!
//! - `model.rs`: what the walk finds ([`Graph`], [`Node`], [`Content`], [`Image`], [`Layer`],
//!   [`LayerFormat`], [`Problem`]);
//! - `walk.rs`: the walk ([`walk`], [`WalkOptions`]) and the digest check;
//! - [`layer`]: reading layers (`--deep`, `--from-release`).
//!
//! This file only declares and re-exports: the files below import each other, never it.

pub mod layer;
mod model;
mod walk;

pub use layer::{classify_layer, is_windows_layout_path};
pub use model::{
    Content, EntryCheck, Graph, Image, Layer, LayerFormat, LookupOutcome, Node, Problem, Program,
};
pub(crate) use walk::verify;
pub use walk::{MAX_DEPTH, MAX_LAYER_BYTES, WalkOptions, walk};
