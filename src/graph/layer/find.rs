//! One file out of a layer, as a container runtime would see it once the layer is applied
//! (`--from-release` reads `release-manifests/image-references` this way): the whole tar stream
//! is walked, the last entry of that name wins (as when extracting), and whiteouts
//! (`.wh.NAME`, `.wh..wh..opq`, per the OCI image spec's layer changesets) that hide the file
//! in lower layers are reported. Only the file's own data is kept, up to a cap.

use std::io::Read;

use super::entries::{Entry, TarError};
use super::read::{Limits, normalised_components, walk_layer};
use crate::graph::model::Problem;

/// Prefix of a whiteout entry's last component (OCI image spec, "Whiteouts").
const WHITEOUT: &str = ".wh.";
/// An opaque whiteout: the directory holding it hides everything lower layers put there.
const OPAQUE: &str = ".wh..wh..opq";

/// What one layer says about a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileInLayer {
    /// The file's bytes, when the layer holds it (the last entry of that name).
    pub file: Option<Vec<u8>>,
    /// The layer hides the file of lower layers: a whiteout of it or of a directory above
    /// it, or an opaque whiteout in one of those directories.
    pub hidden_below: bool,
}

/// Reads the layer from `reader` within `limits` and takes the regular file at `path`
/// (compared once normalised: `./a/b` is `a/b`), at most `max_bytes` long.
pub fn find_file(
    reader: impl Read,
    limits: Limits,
    path: &str,
    max_bytes: u64,
) -> Result<FileInLayer, Problem> {
    let target: Vec<&str> = normalised_components(path).unwrap_or_default();
    let mut found = FileInLayer {
        file: None,
        hidden_below: false,
    };
    walk_layer(reader, limits, |entry, data| {
        let name = String::from_utf8_lossy(entry.name);
        let Some(parts) = normalised_components(&name) else {
            return Ok(());
        };
        if parts == target {
            found.file = Some(take_file(&entry, data, path, max_bytes)?);
        } else if hides(&parts, &target) {
            found.hidden_below = true;
        }
        Ok(())
    })?;
    Ok(found)
}

/// Does the whiteout entry `parts` (if it is one) hide `target` in lower layers?
fn hides(parts: &[&str], target: &[&str]) -> bool {
    let Some((last, dir)) = parts.split_last() else {
        return false;
    };
    if *last == OPAQUE {
        // An opaque directory above the target hides it.
        return dir.len() < target.len() && target.starts_with(dir);
    }
    match last.strip_prefix(WHITEOUT) {
        // `.wh.NAME` deletes NAME: the target itself or a directory above it.
        Some(deleted) => {
            let len = dir.len() + 1;
            len <= target.len() && target.starts_with(dir) && target[dir.len()] == deleted
        }
        None => false,
    }
}

/// The data of the entry `path`, which must be a regular file of at most `max_bytes`.
fn take_file(
    entry: &Entry<'_>,
    data: &mut dyn Read,
    path: &str,
    max_bytes: u64,
) -> Result<Vec<u8>, TarError> {
    let kind = match entry.flag {
        b'0' | 0 | b'7' => None,
        b'1' => Some("a hard link"),
        b'2' => Some("a symbolic link"),
        b'5' => Some("a directory"),
        _ => Some("not a regular file"),
    };
    if let Some(kind) = kind {
        return Err(TarError::Refused(format!(
            "{path} is {kind} (tar type '{}'), not a regular file",
            entry.flag.escape_ascii()
        )));
    }
    if entry.size > max_bytes {
        return Err(TarError::Refused(format!(
            "{path} is {} bytes, larger than the {max_bytes}-byte limit",
            entry.size
        )));
    }
    let mut bytes = Vec::with_capacity(entry.size as usize);
    data.read_to_end(&mut bytes)?;
    if bytes.len() as u64 != entry.size {
        return Err(TarError::Corrupt(format!(
            "the stream ends inside {path} ({} of {} bytes)",
            bytes.len(),
            entry.size
        )));
    }
    Ok(bytes)
}
