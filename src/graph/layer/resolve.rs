//! Finding the program an image runs in what the scans kept of its layers (`scan.rs`), as the
//! runtime finds it (the rules and their sources: `docs/images.md`, "The entry's program"):
//!
//! - the command is `Entrypoint` then `Cmd` (containerd `oci/spec_opts.go`,
//!   `WithImageConfigArgs`);
//! - Linux: runc execs `exec.LookPath(Args[0])` in the container (runc
//!   `libcontainer/standard_init_linux.go`, `linuxStandardInit.Init`; Go `os/exec/lp_unix.go`,
//!   `LookPath`): a name with a `/` is taken as it is (against the working directory), any
//!   other is searched in the image's `PATH`, containerd's default `PATH` when the image sets
//!   no environment at all; layers apply in order with whiteouts; symbolic links are
//!   followed up to 40 hops (Linux's `MAXSYMLINKS`);
//! - Windows: the command line goes to `CreateProcess` in the container (Microsoft,
//!   "CreateProcessW", `lpCommandLine`): `.exe` is appended to a name without an extension;
//!   a name with a path is taken against the drive's root or the working directory
//!   (`C:\` by default); a bare name is searched in the working directory, `System32`,
//!   `System`, the Windows directory, then the image's `PATH`; names compare
//!   case-insensitively; `C:\app\x.exe` is `Files/app/x.exe` in a Windows layer.
//!
//! A file in a layer that was not read, or below one, is unknown: no verdict, never a guess.

use std::collections::{BTreeMap, BTreeSet};

use super::scan::{Kind, LayerScan, Targets, parent};
use crate::binary::{BinaryInfo, Format, dll};
use crate::graph::model::{EntryCheck, Outcome, Program};
use crate::manifest::RunConfig;

/// containerd's `PATH` for a Linux container whose image sets no environment
/// (`oci/spec_opts.go`, `defaultUnixEnv`).
pub const DEFAULT_LINUX_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
/// Most symbolic links followed in one lookup (Linux `MAXSYMLINKS`).
pub const MAX_LINK_HOPS: usize = 40;
/// Most programs in one chain: the command's, then interpreters (`#!`, `env NAME`).
pub const MAX_PROGRAMS: usize = 4;

/// How the program of one image is looked up: from its config, before any layer is read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// Windows rules (else Linux).
    pub windows: bool,
    /// `Entrypoint` then `Cmd`.
    pub command: Vec<String>,
    /// The working directory's key.
    working_dir: String,
    /// Keys of the directories searched for a bare name after the working directory
    /// (Windows: the system directories then `PATH`; Linux: `PATH`, `None` for an empty
    /// element, which is the working directory).
    search: Vec<String>,
}

/// One candidate file: its key and how the image names it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Candidate {
    key: String,
    shown: String,
}

/// What one layer gave the lookup: its scan, or why it was not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LayerState {
    /// Read.
    Read(LayerScan),
    /// Not read (a foreign layer, a layer that could not be read), and why.
    NotRead(String),
}

/// The next thing the lookup needs, or its end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// The headers of the file `key` of layer `layer` (it was not a target when that layer
    /// was read: a link's target, a script's interpreter).
    Need {
        /// The layer's index, base first.
        layer: usize,
        /// The file's key.
        key: String,
    },
    /// The result.
    Done(EntryCheck),
}

/// A Windows path's key: the drive letter dropped, `\` and `/` separating, lowercased.
/// `None` for a relative path.
fn windows_key(path: &str) -> Option<String> {
    let rest = match path.as_bytes() {
        [d, b':', ..] if d.is_ascii_alphabetic() => &path[2..],
        _ => path,
    };
    if !rest.starts_with(['\\', '/']) {
        return None;
    }
    Some(clean(rest.split(['\\', '/'])).to_lowercase())
}

/// Components joined with `/`, empty and `.` dropped, `..` taking one back (never above
/// the root).
fn clean<'a>(parts: impl Iterator<Item = &'a str>) -> String {
    let mut out: Vec<&str> = Vec::new();
    for part in parts {
        match part {
            "" | "." => {}
            ".." => {
                out.pop();
            }
            p => out.push(p),
        }
    }
    out.join("/")
}

fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_string()
    } else {
        format!("{dir}/{name}")
    }
}

/// `%SystemRoot%`, `%windir%` and `%SystemDrive%` expanded, as the container's system
/// environment has them; `None` when another variable is left.
fn expand_windows(entry: &str) -> Option<String> {
    let mut out = entry.to_string();
    for (var, value) in [
        ("%systemroot%", "C:\\Windows"),
        ("%windir%", "C:\\Windows"),
        ("%systemdrive%", "C:"),
    ] {
        while let Some(at) = out.to_lowercase().find(var) {
            out.replace_range(at..at + var.len(), value);
        }
    }
    (!out.contains('%')).then_some(out)
}

impl Plan {
    /// The plan for an image of `os` with these run settings.
    pub fn new(os: &str, run: &RunConfig) -> Plan {
        let windows = os.eq_ignore_ascii_case("windows");
        let command = run.argv();
        if windows {
            let working_dir = windows_key(&run.working_dir).unwrap_or_default();
            let mut search: Vec<String> = ["windows/system32", "windows/system", "windows"]
                .iter()
                .map(|s| s.to_string())
                .collect();
            let path = run.env_var("PATH", true).unwrap_or_default();
            search.extend(
                path.split(';')
                    .filter_map(expand_windows)
                    .filter_map(|p| windows_key(&p)),
            );
            Plan {
                windows,
                command,
                working_dir,
                search,
            }
        } else {
            let working_dir = clean(run.working_dir.split('/'));
            let path = match run.env_var("PATH", false) {
                Some(p) => Some(p.to_string()),
                None if run.env.is_empty() => Some(DEFAULT_LINUX_PATH.to_string()),
                None => None,
            };
            let search = path
                .as_deref()
                .map(|p| {
                    p.split(':')
                        .map(|dir| {
                            if dir.starts_with('/') {
                                clean(dir.split('/'))
                            } else {
                                clean(working_dir.split('/').chain(dir.split('/')))
                            }
                        })
                        .collect()
                })
                .unwrap_or_default();
            Plan {
                windows,
                command,
                working_dir,
                search,
            }
        }
    }

    /// How the image names the file of `key`.
    fn shown(&self, key: &str) -> String {
        if self.windows {
            format!("C:\\{}", key.replace('/', "\\"))
        } else {
            format!("/{key}")
        }
    }

    /// The files `name` may be, in the runtime's order.
    fn candidates(&self, name: &str) -> Vec<Candidate> {
        let keys: Vec<String> = if self.windows {
            let last = name.rsplit(['\\', '/']).next().unwrap_or(name);
            let name = if last.contains('.') {
                name.to_string()
            } else {
                format!("{name}.exe")
            };
            if let Some(key) = windows_key(&name) {
                vec![key]
            } else if name.contains(['\\', '/', ':']) {
                let rest = name.split_once(':').map_or(name.as_str(), |(_, r)| r);
                vec![
                    clean(self.working_dir.split('/').chain(rest.split(['\\', '/'])))
                        .to_lowercase(),
                ]
            } else {
                std::iter::once(&self.working_dir)
                    .chain(&self.search)
                    .map(|dir| join(dir, &name.to_lowercase()))
                    .collect()
            }
        } else if name.contains('/') {
            let base = if name.starts_with('/') {
                ""
            } else {
                &self.working_dir
            };
            vec![clean(base.split('/').chain(name.split('/')))]
        } else {
            self.search.iter().map(|dir| join(dir, name)).collect()
        };
        let mut seen = BTreeSet::new();
        keys.into_iter()
            .filter(|k| seen.insert(k.clone()))
            .map(|key| Candidate {
                shown: self.shown(&key),
                key,
            })
            .collect()
    }

    /// The directories the Windows loader searches for the DLLs of the program `key`
    /// (Microsoft, "Dynamic-link library search order", standard order for unpackaged
    /// applications): the program's directory, `System32`, `System`, the Windows directory,
    /// the working directory, `PATH`.
    fn dll_dirs(&self, key: &str) -> BTreeSet<String> {
        std::iter::once(parent(key).to_string())
            .chain(std::iter::once(self.working_dir.clone()))
            .chain(self.search.iter().cloned())
            .collect()
    }

    /// What the first read of the layers looks for: the files the command's first word may
    /// be, and (Windows) the directories the lookup and the DLL search list.
    pub fn targets(&self) -> Targets {
        let mut targets = Targets {
            windows: self.windows,
            ..Targets::default()
        };
        let Some(name) = self.command.first() else {
            return targets;
        };
        for c in self.candidates(name) {
            if self.windows {
                targets.dirs.extend(self.dll_dirs(&c.key));
            }
            targets.probe.insert(c.key);
        }
        targets
    }
}

/// The image's files as the layers leave them (only what the scans kept).
struct View {
    files: BTreeMap<String, (usize, Kind)>,
    /// Layers not read: index and why.
    unread: Vec<(usize, String)>,
}

impl View {
    fn new(layers: &[LayerState]) -> View {
        let mut files: BTreeMap<String, (usize, Kind)> = BTreeMap::new();
        let mut unread = Vec::new();
        for (i, layer) in layers.iter().enumerate() {
            let scan = match layer {
                LayerState::NotRead(why) => {
                    unread.push((i, why.clone()));
                    continue;
                }
                LayerState::Read(scan) => scan,
            };
            if let Some(why) = &scan.incomplete {
                unread.push((i, why.clone()));
            }
            for seen in &scan.seen {
                let below = |files: &BTreeMap<String, (usize, Kind)>, dir: &str| -> Vec<String> {
                    let prefix = if dir.is_empty() {
                        String::new()
                    } else {
                        format!("{dir}/")
                    };
                    files
                        .range(prefix.clone()..)
                        .take_while(|(k, _)| k.starts_with(&prefix))
                        .filter(|(_, (layer, _))| *layer < i)
                        .map(|(k, _)| k.clone())
                        .collect()
                };
                match &seen.kind {
                    Kind::Opaque => {
                        for k in below(&files, &seen.key) {
                            files.remove(&k);
                        }
                    }
                    Kind::Whiteout => {
                        files.remove(&seen.key);
                        for k in below(&files, &seen.key) {
                            files.remove(&k);
                        }
                    }
                    kind => {
                        files.insert(seen.key.clone(), (i, kind.clone()));
                    }
                }
            }
        }
        View { files, unread }
    }

    /// The first unread layer above `layer` (or any, for `None`), as a reason.
    fn unread_above(&self, layer: Option<usize>) -> Option<String> {
        self.unread
            .iter()
            .find(|(i, _)| layer.is_none_or(|l| *i > l))
            .map(|(i, why)| format!("layer {} was not read ({why})", i + 1))
    }
}

/// Where one key leads.
enum Lookup {
    Found { layer: usize, key: String },
    Missing,
    Unknown(String),
}

/// Follows `key` through the view: symbolic links in any component (Linux), hard links.
fn lookup(view: &View, key: &str, windows: bool) -> Lookup {
    let mut pending: Vec<String> = key.split('/').rev().map(str::to_string).collect();
    let mut done: Vec<String> = Vec::new();
    let mut hops = 0;
    while let Some(part) = pending.pop() {
        match part.as_str() {
            "" | "." => continue,
            ".." => {
                done.pop();
                continue;
            }
            _ => done.push(part),
        }
        let here = done.join("/");
        let target = match view.files.get(&here) {
            Some((_, Kind::Symlink(t))) if !windows => t.clone(),
            Some((_, Kind::Hardlink(t))) if pending.is_empty() => format!("/{t}"),
            _ => continue,
        };
        hops += 1;
        if hops > MAX_LINK_HOPS {
            return Lookup::Unknown(format!(
                "more than {MAX_LINK_HOPS} links followed from /{key}"
            ));
        }
        done.pop();
        if target.starts_with('/') {
            done.clear();
        }
        pending.extend(target.split('/').rev().map(str::to_string));
    }
    let key = done.join("/");
    let found = view.files.get(&key);
    let layer = found.map(|(l, _)| *l);
    if let Some(why) = view.unread_above(layer) {
        return Lookup::Unknown(why);
    }
    match found {
        Some((layer, Kind::File)) => Lookup::Found { layer: *layer, key },
        _ => Lookup::Missing,
    }
}

/// The lookup of one program: the first candidate found, in order; an unknown candidate
/// before it makes the whole lookup unknown.
fn find(plan: &Plan, view: &View, name: &str) -> (Vec<String>, Lookup) {
    let candidates = plan.candidates(name);
    let looked_up = candidates.iter().map(|c| c.shown.clone()).collect();
    for c in &candidates {
        match lookup(view, &c.key, plan.windows) {
            Lookup::Missing => {}
            other => return (looked_up, other),
        }
    }
    (looked_up, Lookup::Missing)
}

/// The DLLs the PE program `key` imports that no directory of the loader's search holds.
fn missing_dlls(
    plan: &Plan,
    view: &View,
    key: &str,
    binary: &BinaryInfo,
) -> Option<Result<Vec<String>, String>> {
    let Format::Pe(pe) = &binary.format else {
        return None;
    };
    if let Some(why) = view.unread_above(None) {
        return Some(Err(format!("{why}: the DLLs it holds are unknown")));
    }
    let dirs = plan.dll_dirs(key);
    let provided: BTreeSet<String> = view
        .files
        .iter()
        .filter(|(k, _)| dirs.contains(parent(k)))
        .map(|(k, _)| k.rsplit('/').next().unwrap_or(k).to_string())
        .collect();
    Some(Ok(dll::missing(&pe.imports, &provided)))
}

/// One step of the lookup over the layers read so far and the extra headers read
/// (`probed`: layer index and key).
pub fn resolve(
    plan: &Plan,
    layers: &[LayerState],
    probed: &BTreeMap<(usize, String), BinaryInfo>,
) -> Step {
    let view = View::new(layers);
    let mut programs: Vec<Program> = Vec::new();
    let mut name = plan.command.first().cloned();
    let mut env_arg: Option<String> = None;
    while let Some(current) = name.take() {
        if programs.len() >= MAX_PROGRAMS {
            break;
        }
        let (looked_up, found) = find(plan, &view, &current);
        let outcome = match found {
            Lookup::Missing => Outcome::Missing,
            Lookup::Unknown(why) => Outcome::NotChecked(why),
            Lookup::Found { layer, key } => {
                let binary = match layers.get(layer) {
                    Some(LayerState::Read(scan)) => scan.probed.get(&key),
                    _ => None,
                }
                .or_else(|| probed.get(&(layer, key.clone())));
                let Some(binary) = binary else {
                    return Step::Need { layer, key };
                };
                if let Format::Script { interpreter, args } = &binary.format {
                    name = Some(interpreter.clone());
                    let env = interpreter.rsplit('/').next() == Some("env");
                    env_arg = args
                        .as_deref()
                        .and_then(|a| a.split_whitespace().next())
                        .filter(|a| env && !a.starts_with('-'))
                        .map(str::to_string);
                } else if let Some(arg) = env_arg.take() {
                    name = Some(arg);
                }
                Outcome::Found {
                    path: plan.shown(&key),
                    dlls: missing_dlls(plan, &view, &key, binary),
                    binary: Box::new(binary.clone()),
                }
            }
        };
        programs.push(Program {
            name: current,
            looked_up,
            outcome,
        });
    }
    Step::Done(EntryCheck {
        command: plan.command.clone(),
        programs,
    })
}

#[cfg(test)]
mod tests;
