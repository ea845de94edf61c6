//! imgcheck keeps multi-arch container releases honest for Windows nodes.
//!
//! The library gathers a verified image graph from a [`source`] (a registry or an OCI image
//! layout), judges it with the pure [`engine`] against a [`policy`] and the containerd matching
//! rules in [`platform`], and renders [`report`]s; [`signature`] reads what cosign stored next to an image. A [`run`] does all of it for the images a
//! user names (references, [`input`] lists, a release, pod templates) through one session.
//! See `docs/decisions.md` for the design.

#![warn(missing_docs)]

pub mod assemble;
pub mod auth;
pub mod binary;
pub mod builder;
pub mod cluster;
pub mod digest;
pub mod engine;
pub mod error;
pub mod escape;
pub mod graph;
pub mod input;
pub mod manifest;
pub mod mirror;
pub mod platform;
pub mod policy;
pub mod reference;
pub mod report;
pub mod run;
pub mod scheduling;
mod secret;
pub mod session;
pub mod signature;
pub mod source;
pub mod yaml;
