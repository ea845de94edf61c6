//! One file out of a layer, as a Linux runtime sees it once the layer is applied
//! (`--from-release` reads `release-manifests/image-references` this way). Entries are read as
//! Go's `archive/tar` reads them (`entries.rs`) and applied in order as containers/storage's
//! `UnpackLayer` (pkg/archive) applies them: a name is cleaned with `/` as the only separator
//! (a backslash is an ordinary character on Linux), a name that climbs above the root makes
//! the layer fail ("is outside of"), the last entry of a name wins, a whiteout (`.wh.NAME`,
//! per the OCI image spec's layer changesets) removes NAME even when this layer put it there,
//! a non-directory replaces a directory and what it held, and an opaque whiteout
//! (`.wh..wh..opq`) hides what lower layers put in its directory. A symbolic or hard link at
//! the file or at a directory above it, in any layer read, refuses the layer: a runtime's
//! unpacked filesystem follows it while `oc` reads entries by name. Only the file's own data
//! is kept, up to a cap.

use std::io::{BufRead, Read};

use super::entries::{Entry, TarError};
use super::read::{Limits, linux_components, walk_layer};
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
/// (compared once cleaned: `./a/b` is `a/b`), at most `max_bytes` long.
pub fn find_file(
    reader: impl BufRead,
    limits: Limits,
    path: &str,
    max_bytes: u64,
) -> Result<FileInLayer, Problem> {
    let target: Vec<&str> = linux_components(path).unwrap_or_default();
    let mut found = FileInLayer {
        file: None,
        hidden_below: false,
    };
    walk_layer(reader, limits, |entry, data| {
        let name = String::from_utf8_lossy(entry.name);
        let Some(parts) = linux_components(&name) else {
            return Err(TarError::Refused(format!(
                "entry {name:?} is outside of the layer's root: a Linux runtime refuses to \
                 unpack the layer (containers/storage pkg/archive UnpackLayer)"
            )));
        };
        if matches!(entry.flag, b'1' | b'2') && !parts.is_empty() && target.starts_with(&parts) {
            return Err(TarError::Refused(linked(&parts.join("/"), &entry)));
        }
        if parts == target {
            found.file = Some(take_file(&entry, data, path, max_bytes)?);
        } else if removes(&parts, entry.flag, &target) {
            found.file = None;
            found.hidden_below = true;
        } else if opaque_above(&parts, &target) {
            found.hidden_below = true;
        }
        Ok(())
    })?;
    Ok(found)
}

/// Why a link at `name` (the file or a directory above it) is refused: the cluster-version
/// operator reads the file from the unpacked filesystem, where the OS follows the link, while
/// `oc adm release extract` takes only the regular files named under `release-manifests/`
/// (openshift/oc `pkg/cli/admin/release/extract.go`, `ExtractOptions.Run`); the two can read
/// different files, so imgcheck reads neither.
fn linked(name: &str, entry: &Entry<'_>) -> String {
    let kind = match entry.flag {
        b'1' => "a hard link",
        _ => "a symbolic link",
    };
    format!(
        "{name:?} is {kind} (to {:?}): the cluster-version operator would read the file \
         through it on the unpacked filesystem, oc adm release extract only the regular files \
         named under release-manifests/ (openshift/oc pkg/cli/admin/release/extract.go, \
         ExtractOptions.Run); imgcheck follows no link in the path: refused",
        String::from_utf8_lossy(entry.link)
    )
}

/// Does the entry `parts` (of type `flag`) remove `target`: a whiteout of it or of a
/// directory above it, or a non-directory in place of a directory above it?
fn removes(parts: &[&str], flag: u8, target: &[&str]) -> bool {
    if parts.len() < target.len() && target.starts_with(parts) {
        return flag != b'5';
    }
    let Some((last, dir)) = parts.split_last() else {
        return false;
    };
    match last.strip_prefix(WHITEOUT) {
        Some(deleted) if *last != OPAQUE => {
            dir.len() < target.len() && target.starts_with(dir) && target[dir.len()] == deleted
        }
        _ => false,
    }
}

/// Is the entry `parts` an opaque whiteout in a directory above `target`?
fn opaque_above(parts: &[&str], target: &[&str]) -> bool {
    match parts.split_last() {
        Some((last, dir)) => *last == OPAQUE && dir.len() < target.len() && target.starts_with(dir),
        None => false,
    }
}

/// The data of the entry `path`, which must be a regular file of at most `max_bytes` (a link
/// there is refused before: [`linked`]).
fn take_file(
    entry: &Entry<'_>,
    data: &mut dyn Read,
    path: &str,
    max_bytes: u64,
) -> Result<Vec<u8>, TarError> {
    let kind = match entry.flag {
        b'0' | 0 | b'7' => None,
        b'5' => Some("a directory"),
        _ => Some("not a regular file"),
    };
    let kind = kind.or(entry.sparse.then_some("a GNU sparse file"));
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
