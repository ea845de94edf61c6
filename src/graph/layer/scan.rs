//! What `--deep` keeps of one layer to find the program an image runs, while the layer
//! streams: the entries that matter to the lookup (links, whiteouts, and the files of the
//! directories the lookup reads), and for each file it may run, what C1's header parser
//! ([`Probe`]) reads of its first bytes. Nothing else of a file's data is kept.
//!
//! Names are keys: Linux names cleaned as containers/storage unpacks them (`/` separates);
//! Windows names taken under `Files/`, lowercased (NTFS in a container compares names
//! case-insensitively) with `\` also separating.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, Read};

use super::entries::{Entry, TarError};
use super::read::{Limits, check_layer_with, linux_components, normalised_components, walk_layer};
use crate::binary::{BinaryInfo, Probe};
use crate::graph::model::{LayerFormat, Problem};

/// Most bytes of names one layer's scan keeps (a Linux layer lists all its non-directory
/// entries): past it the layer counts as not read for the lookup, never guessed.
pub const MAX_LISTED_BYTES: usize = 16 * 1024 * 1024;

/// Prefix of a whiteout entry's last component (OCI image spec, "Whiteouts").
const WHITEOUT: &str = ".wh.";
/// An opaque whiteout: the directory holding it hides everything lower layers put there.
const OPAQUE: &str = ".wh..wh..opq";

/// What a scan looks for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Targets {
    /// The layers are Windows layers (names under `Files/`, case-insensitive).
    pub windows: bool,
    /// Keys of the files to read the headers of.
    pub probe: BTreeSet<String>,
    /// Windows: keys of the directories whose files are listed (the lookup's and the DLL
    /// search's directories). Linux layers list every non-directory entry.
    pub dirs: BTreeSet<String>,
}

/// What an entry of a layer does to the image's file system.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// A regular file.
    File,
    /// A directory: it merges with a directory below, replaces anything else.
    Dir,
    /// A character or block device, a FIFO: no program (`execve` refuses it).
    Special,
    /// A symbolic link to `target` (as written).
    Symlink(String),
    /// A hard link to the entry named `target` (a key).
    Hardlink(String),
    /// A whiteout: the path is removed, with all it holds.
    Whiteout,
    /// An opaque whiteout: the directory hides what lower layers put in it.
    Opaque,
}

/// One entry kept, in layer order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    /// The path the entry is about (for a whiteout, the path it removes; for an opaque
    /// whiteout, its directory).
    pub key: String,
    /// What it does.
    pub kind: Kind,
    /// The entry's permission bits (a file's execute bits).
    pub mode: u32,
}

/// What a scan kept of one layer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LayerScan {
    /// The entries that matter to the lookup, in layer order.
    pub seen: Vec<Seen>,
    /// The headers read of each target file the layer holds (its last entry of that name).
    pub probed: BTreeMap<String, BinaryInfo>,
    /// Why the listing is not whole (too many names), if it is not.
    pub incomplete: Option<String>,
}

/// The key of a tar entry's name, `None` when it has none (a Windows entry outside
/// `Files/`, a name that climbs out of the root).
pub fn entry_key(name: &str, windows: bool) -> Option<String> {
    if windows {
        let parts = normalised_components(name)?;
        let (top, rest) = parts.split_first()?;
        (*top == "Files").then(|| rest.join("/").to_lowercase())
    } else {
        linux_components(name).map(|parts| parts.join("/"))
    }
}

/// The directory of a key (`""` for the root).
pub fn parent(key: &str) -> &str {
    key.rsplit_once('/').map_or("", |(dir, _)| dir)
}

/// What one entry means to the lookup, if anything.
fn seen_of(entry: &Entry<'_>, key: String, windows: bool) -> Option<Seen> {
    let (dir, last) = key.rsplit_once('/').unwrap_or(("", &key));
    if last == OPAQUE {
        return Some(Seen {
            key: dir.to_string(),
            kind: Kind::Opaque,
            mode: 0,
        });
    }
    if let Some(removed) = last.strip_prefix(WHITEOUT) {
        let key = if dir.is_empty() {
            removed.to_string()
        } else {
            format!("{dir}/{removed}")
        };
        return Some(Seen {
            key,
            kind: Kind::Whiteout,
            mode: 0,
        });
    }
    let link = String::from_utf8_lossy(entry.link);
    let kind = match entry.flag {
        b'5' if key.is_empty() => return None,
        b'5' => Kind::Dir,
        b'2' => Kind::Symlink(link.into_owned()),
        b'1' => Kind::Hardlink(entry_key(&link, windows).unwrap_or_default()),
        b'3' | b'4' | b'6' => Kind::Special,
        _ => Kind::File,
    };
    Some(Seen {
        key,
        kind,
        mode: entry.mode,
    })
}

/// Reads a file's first bytes into a [`Probe`] until it has what it needs.
fn probe_file(entry: &Entry<'_>, data: &mut dyn Read) -> Result<BinaryInfo, TarError> {
    let mut probe = Probe::new(entry.size);
    let mut buf = vec![0u8; 64 * 1024];
    while probe.wants_more() {
        let n = data.read(&mut buf)?;
        if n == 0 {
            break;
        }
        probe.feed(&buf[..n]);
    }
    Ok(probe.finish())
}

/// The scanner's state over one layer.
struct Scanner<'t> {
    targets: &'t Targets,
    scan: LayerScan,
    listed: usize,
}

impl Scanner<'_> {
    fn entry(&mut self, entry: &Entry<'_>, data: &mut dyn Read) -> Result<(), TarError> {
        let name = String::from_utf8_lossy(entry.name);
        let windows = self.targets.windows;
        let Some(key) = entry_key(&name, windows) else {
            return Ok(());
        };
        let probe = self.targets.probe.contains(&key);
        let Some(seen) = seen_of(entry, key, windows) else {
            return Ok(());
        };
        let wanted = !windows
            || probe
            || matches!(seen.kind, Kind::Whiteout | Kind::Opaque)
            || self.targets.dirs.contains(parent(&seen.key));
        if !wanted || self.scan.incomplete.is_some() {
            return Ok(());
        }
        self.listed += seen.key.len() + 16;
        if self.listed > MAX_LISTED_BYTES {
            self.scan.incomplete = Some(format!(
                "the layer names more entries than the {MAX_LISTED_BYTES}-byte listing holds"
            ));
            self.scan.seen = Vec::new();
            return Ok(());
        }
        if probe && seen.kind == Kind::File && !entry.sparse {
            let info = probe_file(entry, data)?;
            self.scan.probed.insert(seen.key.clone(), info);
        } else {
            self.scan.probed.remove(&seen.key);
        }
        self.scan.seen.push(seen);
        Ok(())
    }
}

/// Reads a Windows layer: its layout (as [`check_layer`](super::read::check_layer)) and what
/// `targets` asks for.
pub fn scan_windows_layer(
    reader: impl BufRead,
    limits: Limits,
    targets: &Targets,
) -> (LayerFormat, LayerScan) {
    let mut scanner = Scanner {
        targets,
        scan: LayerScan::default(),
        listed: 0,
    };
    let format = check_layer_with(reader, limits, |entry, data| scanner.entry(entry, data));
    (format, scanner.scan)
}

/// Reads a Linux layer for what `targets` asks for.
pub fn scan_linux_layer(
    reader: impl BufRead,
    limits: Limits,
    targets: &Targets,
) -> Result<LayerScan, Problem> {
    let mut scanner = Scanner {
        targets,
        scan: LayerScan::default(),
        listed: 0,
    };
    walk_layer(reader, limits, |entry, data| scanner.entry(&entry, data))?;
    Ok(scanner.scan)
}

#[cfg(test)]
mod tests;
