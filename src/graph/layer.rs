//! The `--deep` layer check: is every entry of a Windows layer inside the Windows layer
//! layout (`Files/`, `Hives/`, `UtilityVM/`; see `docs/images.md`, "Windows layer format")?
//!
//! A layer is read as a stream in bounded memory: gzip (every member) and zstd (every frame)
//! are decoded on the fly and only tar headers are kept (`entries.rs`); names are normalised
//! as an extractor resolves them before the layout check; the decompressed size is capped
//! relative to the compressed size (decompression bombs) and the work ends at the run's
//! deadline (`read.rs`). [`fetch`] feeds a source's blob stream in and checks its digest,
//! handing the bytes to the check on another thread through `pipe.rs` (reused buffers).
//! [`find_file`] reads one file out of a layer the same way (`--from-release`).
//! `program.rs` reads an image's layers for `--deep`: the layout check and, on the same
//! stream, what `scan.rs` keeps to find the program the image runs (`resolve.rs`).
//!
//! This file only declares and re-exports: the files below import each other, never it.

mod entries;
pub mod fetch;
mod find;
mod pipe;
pub(super) mod program;
mod read;
mod resolve;
mod scan;
mod view;

pub use find::{FileInLayer, find_file};
pub use read::{
    EXPANSION_FLOOR, Limits, MAX_EXPANSION_RATIO, check_layer, classify_layer,
    is_windows_layout_path, normalised_components,
};
