//! `imgcheck build`: turns a plan (`buildah/images.yaml`) into per-platform images built by
//! Buildah, a manifest list assembled from their configs, and a verdict.
//!
//! - [`assembler`]: the list of each image, made by the assemble code and pushed.
//! - [`plan`]: the plan file (images, Containerfiles, targets, Windows bases, policies).
//! - [`containerfile`]: the Containerfile reader and the Windows-with-Buildah lint rules.
//! - [`check`]: `--check`, the plan and its Containerfiles linted together.
//! - [`buildah`]: Buildah command lines and version capabilities (pure).
//! - [`jobs`]: one job per image × platform (× Windows build) (pure).
//! - [`run`]: running the jobs with Buildah, then assemble, push and verify per image.

pub mod assembler;
pub mod buildah;
pub mod check;
pub mod containerfile;
pub mod jobs;
pub mod plan;
pub mod run;
