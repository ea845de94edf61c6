//! `imgcheck build`: turns a plan (`buildah/images.yaml`) into per-platform images built by
//! Buildah, a manifest list assembled from their configs, and a verdict.
//!
//! The files, in layers: each imports only files of the layers below it (none above, none
//! in a circle), and this file only declares them and re-exports [`BuildError`].
//!
//! 1. Pure leaves, importing no sibling:
//!    - [`plan`]: the plan file (images, Containerfiles, targets, Windows bases, policies).
//!    - [`containerfile`]: the Containerfile reader and the Windows-with-Buildah lint rules.
//!    - [`buildah`]: Buildah command lines and version capabilities.
//!    - [`progress`]: the [`progress::Reporter`] a run tells its progress to (the CLI draws it).
//!    - [`windows_layer`]: the Windows layer writer (a tar in, a Windows-format layer out).
//!    - [`compose::lex`], [`compose::paths`]: the words and the paths of a Windows stage.
//! 2. What reads the plan and the Containerfiles:
//!    - [`check`]: `--check`, the plan and its Containerfiles linted together.
//!    - [`compose::stage`]: whether a Windows stage can be composed, and its plan;
//!      [`compose::config`]: that plan applied to the base's config.
//!    - [`base`]: whether this Buildah may build Windows targets, and the Windows bases checked.
//! 3. [`jobs`]: one job per image × platform (× Windows build), and each image's list.
//! 4. [`stage_image`]: what the two writers of a Windows stage's image share (its error
//!    [`stage_image::StageError`], the manifest and config it starts from).
//! 5. [`error`]: why a build stops — the command, the run, one job, one step of an image;
//!    imports only the errors it wraps (plan, jobs, base, stage_image).
//! 6. The steps of a run:
//!    - [`exec`]: running Buildah processes, their logs and log tails.
//!    - [`outcome`]: how each job and image ended, and the run's exit kind.
//!    - [`assembler`]: the list of each image, made by the assemble code and pushed.
//!    - [`rewrite`]: the Windows stage of an image built by Buildah before 1.44: its added
//!      layers rewritten by [`windows_layer`], its config and manifest fixed, pushed again.
//!    - [`compose`]: the Windows stage composed without Buildah building it: whether it can
//!      be, its files as one layer by [`windows_layer`], the base's config edited, pushed as
//!      an image.
//!
//!    [`rewrite`] and [`compose`] write their image as an OCI layout with
//!    [`crate::source::layout::LayoutWriter`] before pushing it.
//! 7. [`run`]: the orchestration: jobs run in parallel, then per image assemble, push, verify.

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
