//! The image's file system as its layers leave it (only what the scans kept), and the walk
//! of one path through it, as the runtimes build the one and the kernel does the other:
//!
//! - layers apply in order as containerd's `archive.Apply` (`pkg/archive/tar.go`,
//!   `applyNaive`) and containers/storage's `UnpackLayer` apply them: an entry replaces what
//!   was at its name, and everything below it, unless both are directories (they merge); a
//!   whiteout removes the name and what it holds, an opaque whiteout what lower layers put
//!   in its directory (OCI image spec, "Whiteouts");
//! - a hard link is a second name of the inode its target names **when the entry is
//!   applied** (`link(2)`; `createTarFile`, `tar.TypeLink`): what later replaces the target's
//!   name does not change it;
//! - a path is walked as Linux's `path_lookupat` (`fs/namei.c`) walks it: a symbolic link in
//!   any component is followed (at most `MAXSYMLINKS`, 40, then `ELOOP`), `..` goes to the
//!   parent of the directory reached, after the link that led there (`follow_dotdot`), not
//!   lexically; a component that is not a directory ends the walk (`ENOTDIR`); a component
//!   over `NAME_MAX` (255) bytes or a path of `PATH_MAX` (4096) bytes or more is
//!   `ENAMETOOLONG`.
//!
//! Windows layers: names compare as keys (lowercased, `\` separating), links are not
//! followed.

use std::collections::BTreeMap;

use super::scan::{Kind, LayerScan, Seen};

/// Most symbolic links one path walk follows (Linux `include/linux/namei.h`, `MAXSYMLINKS`).
pub const MAX_LINK_HOPS: usize = 40;
/// Longest component (Linux `NAME_MAX`).
pub const NAME_MAX: usize = 255;
/// A path of this many bytes or more is refused (Linux `PATH_MAX`, which counts the NUL).
pub const PATH_MAX: usize = 4096;

/// What one layer gave the lookup: its scan, or why it was not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LayerState {
    /// Read.
    Read(LayerScan),
    /// Not read (a foreign layer, a layer that could not be read), and why.
    NotRead(String),
}

/// One name of the image's file system.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FsNode {
    /// A directory (one a layer names, or one that holds a name).
    Dir,
    /// A regular file: the entry whose data it is (layer index, key; for a hard link, the
    /// entry it was linked to) and its permission bits.
    File {
        /// The layer holding the data.
        layer: usize,
        /// The entry's key in that layer.
        key: String,
        /// Its permission bits.
        mode: u32,
    },
    /// A symbolic link to this target (as written).
    Symlink(String),
    /// A device or FIFO (or, on Windows, a link): never a program.
    Special,
}

/// A directory implied by the names below it.
static IMPLIED_DIR: (usize, FsNode) = (0, FsNode::Dir);

/// The image's files as the layers leave them.
pub struct View {
    /// Each name: the layer that put it there, and what it is.
    files: BTreeMap<String, (usize, FsNode)>,
    /// Layers not read: index and why.
    unread: Vec<(usize, String)>,
    windows: bool,
}

/// Where a walk ended.
pub enum Walked<'v> {
    /// At this name (key), which is this node (never a symbolic link).
    At(String, &'v (usize, FsNode)),
    /// No such name (`ENOENT`, `ENOTDIR`).
    Absent,
    /// The kernel refuses the path (`ELOOP`, `ENAMETOOLONG`), and why.
    Refused(String),
}

fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_string()
    } else {
        format!("{dir}/{name}")
    }
}

impl View {
    /// The view of `layers`, base first.
    pub fn new(layers: &[LayerState], windows: bool) -> View {
        let mut view = View {
            files: BTreeMap::new(),
            unread: Vec::new(),
            windows,
        };
        for (i, layer) in layers.iter().enumerate() {
            let scan = match layer {
                LayerState::NotRead(why) => {
                    view.unread.push((i, why.clone()));
                    continue;
                }
                LayerState::Read(scan) => scan,
            };
            if let Some(why) = &scan.incomplete {
                view.unread.push((i, why.clone()));
            }
            for seen in &scan.seen {
                view.apply(i, seen);
            }
        }
        view
    }

    /// Removes what is below `dir` (put there by layers under `under`, if given).
    fn remove_below(&mut self, dir: &str, under: Option<usize>) {
        let prefix = if dir.is_empty() {
            String::new()
        } else {
            format!("{dir}/")
        };
        let doomed: Vec<String> = self
            .files
            .range(prefix.clone()..)
            .take_while(|(k, _)| k.starts_with(&prefix))
            .filter(|(_, (layer, _))| under.is_none_or(|u| *layer < u))
            .map(|(k, _)| k.clone())
            .collect();
        for k in doomed {
            self.files.remove(&k);
        }
    }

    /// Applies one entry of layer `layer`.
    fn apply(&mut self, layer: usize, seen: &Seen) {
        let key = &seen.key;
        let node = match &seen.kind {
            Kind::Opaque => return self.remove_below(key, Some(layer)),
            Kind::Whiteout => {
                self.files.remove(key);
                return self.remove_below(key, None);
            }
            Kind::Dir => {
                // A directory over a directory merges; over anything else it replaces it.
                if !matches!(self.files.get(key), Some((_, FsNode::Dir))) {
                    self.files.insert(key.clone(), (layer, FsNode::Dir));
                }
                return;
            }
            Kind::File => FsNode::File {
                layer,
                key: key.clone(),
                mode: seen.mode,
            },
            Kind::Special => FsNode::Special,
            Kind::Symlink(_) if self.windows => FsNode::Special,
            Kind::Symlink(target) => FsNode::Symlink(target.clone()),
            Kind::Hardlink(target) => match self.files.get(target) {
                Some((_, FsNode::Dir)) => return,
                Some((_, node)) => node.clone(),
                // A Windows scan lists only the directories the lookup reads: the target is
                // in this layer, in a folder not listed; its headers are asked for.
                None if self.windows => FsNode::File {
                    layer,
                    key: target.clone(),
                    mode: seen.mode,
                },
                // link(2) fails: the runtime cannot apply the layer, the name never exists.
                None => return,
            },
        };
        self.remove_below(key, None);
        self.files.insert(key.clone(), (layer, node));
    }

    /// The node at `key`: a name some layer put there, or a directory the names below it
    /// imply.
    fn node(&self, key: &str) -> Option<&(usize, FsNode)> {
        if let Some(found) = self.files.get(key) {
            return Some(found);
        }
        let prefix = format!("{key}/");
        self.files
            .range(prefix.clone()..)
            .next()
            .filter(|(k, _)| k.starts_with(&prefix))
            .map(|_| &IMPLIED_DIR)
    }

    /// The regular files directly in each of `dirs`.
    pub fn files_in<'v>(
        &'v self,
        dirs: &'v std::collections::BTreeSet<String>,
    ) -> impl Iterator<Item = &'v str> + 'v {
        self.files
            .iter()
            .filter(|(k, (_, node))| {
                matches!(node, FsNode::File { .. }) && dirs.contains(super::scan::parent(k))
            })
            .map(|(k, _)| k.as_str())
    }

    /// The first unread layer above `layer` (or any, for `None`), as a reason.
    pub fn unread_above(&self, layer: Option<usize>) -> Option<String> {
        self.unread
            .iter()
            .find(|(i, _)| layer.is_none_or(|l| *i > l))
            .map(|(i, why)| format!("layer {} was not read ({why})", i + 1))
    }

    /// A Windows key as it is (no links are followed).
    pub fn get(&self, key: &str) -> Walked<'_> {
        match self.files.get(key) {
            Some(found) => Walked::At(key.to_string(), found),
            None => Walked::Absent,
        }
    }

    /// The key of the directory a process whose working directory is `path` is in: runc
    /// changes to it inside the container, so the kernel walks it (links and `..` as
    /// [`walk`](Self::walk)); a directory no layer holds is created there, by its lexical
    /// name.
    pub fn working_dir(&self, path: &str) -> String {
        match self.walk("", path) {
            Walked::At(key, (_, FsNode::Dir)) => key,
            _ => path
                .split('/')
                .filter(|p| !p.is_empty() && *p != ".")
                .collect::<Vec<_>>()
                .join("/"),
        }
    }

    /// Walks the Linux `path` (against the directory key `cwd` when relative) as the kernel
    /// does, following every symbolic link, the last component's too.
    pub fn walk(&self, cwd: &str, path: &str) -> Walked<'_> {
        if path.len() >= PATH_MAX {
            return Walked::Refused(format!(
                "ENAMETOOLONG: the path is {} bytes, the kernel takes fewer than {PATH_MAX} \
                 (PATH_MAX, fs/namei.c getname)",
                path.len()
            ));
        }
        let mut done: Vec<String> = if path.starts_with('/') {
            Vec::new()
        } else {
            cwd.split('/')
                .filter(|p| !p.is_empty())
                .map(str::to_string)
                .collect()
        };
        let mut pending: Vec<String> = path.split('/').rev().map(str::to_string).collect();
        let mut hops = 0;
        while let Some(part) = pending.pop() {
            match part.as_str() {
                "" | "." => continue,
                ".." => {
                    done.pop();
                    continue;
                }
                p if p.len() > NAME_MAX => {
                    return Walked::Refused(format!(
                        "ENAMETOOLONG: a component of {} bytes, the kernel takes at most \
                         {NAME_MAX} (NAME_MAX, fs/namei.c)",
                        p.len()
                    ));
                }
                _ => {}
            }
            let here = join(&done.join("/"), &part);
            let Some(found) = self.node(&here) else {
                return Walked::Absent;
            };
            match &found.1 {
                FsNode::Symlink(target) => {
                    hops += 1;
                    if hops > MAX_LINK_HOPS {
                        return Walked::Refused(format!(
                            "ELOOP: more than {MAX_LINK_HOPS} symbolic links followed from \
                             {path} (MAXSYMLINKS, fs/namei.c)"
                        ));
                    }
                    if target.starts_with('/') {
                        done.clear();
                    }
                    pending.extend(target.split('/').rev().map(str::to_string));
                }
                _ if pending.is_empty() => return Walked::At(here, found),
                FsNode::Dir => done.push(part),
                // ENOTDIR: the path goes on below a file.
                _ => return Walked::Absent,
            }
        }
        Walked::At(done.join("/"), &IMPLIED_DIR)
    }
}
