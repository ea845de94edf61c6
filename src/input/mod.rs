//! The user's input files: reading one (or standard input for `-`), the reference lists and
//! ImageSet configurations a run verifies, and the one error a bad input is.
//!
//! - [`read_reference_list`], [`read_imageset`]: plain reference lists (`--from-file`) and
//!   oc-mirror ImageSetConfigurations (`--from-imageset`), each entry with what oc-mirror
//!   copies of it ([`ImageSetEntry`]).
//! - [`InputError`]: which input, what is wrong with it, and the error behind it.

mod error;
mod file;
mod imageset;
mod lists;

pub use error::InputError;
pub use file::DEFAULT_MAX_INPUT_BYTES;
pub(crate) use file::{ReadError, file_kind, open_capped, read_file, read_rest, read_text};
pub use imageset::{ImageSet, ImageSetEntry, is_valid_target_repo, parse_imageset, read_imageset};
pub use lists::{parse_reference_list, read_reference_list};
