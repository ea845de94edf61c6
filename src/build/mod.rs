//! `imgcheck build`: turns a plan (`buildah/images.yaml`) into per-platform images built by
//! Buildah, a manifest list assembled from their configs, and a verdict.
//!
//! - [`plan`]: the plan file (images, Containerfiles, targets, Windows bases, policies).
//! - [`containerfile`]: the Containerfile reader and the Windows-with-Buildah lint rules.
//! - [`check`]: `--check`, the plan and its Containerfiles linted together.
//! - [`buildah`]: Buildah command lines and version capabilities (pure).
//! - [`jobs`]: one job per image × platform (× Windows build), and each image's list (pure).
//! - [`base`]: whether this Buildah may build Windows targets, and the Windows bases checked.
//! - [`exec`]: running Buildah processes, their logs and log tails.
//! - [`progress`]: the [`progress::Reporter`] a run tells its progress to (the CLI draws it).
//! - [`run`]: the orchestration: jobs run in parallel, then per image assemble, push, verify.
//! - [`assembler`]: the list of each image, made by the assemble code and pushed.
//! - [`outcome`]: how each job and image ended, and the run's exit kind.
//! - [`error`]: why a build stops, each error with its cause.
//! - [`windows_layer`]: the Windows layer writer (pure: a tar in, a Windows-format layer out).
//! - [`windows_stage`]: the Windows stage of an image built by Buildah before 1.44: its added
//!   layers rewritten by [`windows_layer`], its config and manifest fixed, pushed again.
//! - [`compose`]: the Windows stage composed without Buildah building it: whether it can be,
//!   its files as one layer by [`windows_layer`], the base's config edited, pushed as an image.

pub mod assembler;
pub mod base;
pub mod buildah;
pub mod check;
pub mod compose;
pub mod containerfile;
pub mod error;
pub mod exec;
pub mod jobs;
pub mod outcome;
pub mod plan;
pub mod progress;
pub mod rewrite;
pub mod run;
pub mod stage_image;
pub mod windows_layer;

pub use error::BuildError;
