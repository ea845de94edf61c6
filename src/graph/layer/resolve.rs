//! Finding the program an image runs in what the scans kept of its layers (`scan.rs`), as the
//! runtime finds it (the rules and their sources: `docs/images.md`, "The entry's program"):
//!
//! - the command is `Entrypoint` then `Cmd` (containerd `oci/spec_opts.go`,
//!   `WithImageConfigArgs`), an `Entrypoint` of one empty string dropped (containerd's CRI,
//!   `pkg/cri/opts/spec.go`, `WithProcessArgs`);
//! - Linux: runc execs `exec.LookPath(Args[0])` in the container (runc
//!   `libcontainer/standard_init_linux.go`, `linuxStandardInit.Init`; Go `os/exec/lp_unix.go`,
//!   `LookPath`): a name with a `/` is taken as it is (against the working directory), any
//!   other is searched in the image's `PATH` (containerd's default `PATH` when the image sets
//!   no environment at all), skipping what is no executable file; a program found through a
//!   relative `PATH` element is refused (`ErrDot`). The path is walked as the kernel walks it
//!   (`view.rs`); the file must be a regular file with an execute bit (`execve`, `EACCES`).
//!   A `#!` script's interpreter is opened by the kernel as its path says (`fs/binfmt_script.c`,
//!   `open_exec`: no `PATH`), at most 5 in a row (`fs/exec.c`, `exec_binprm`: `ELOOP` past
//!   depth 5); `/usr/bin/env NAME` execs NAME through `PATH` (`execvp`);
//! - Windows: the command line goes to `CreateProcess` in the container (Microsoft,
//!   "CreateProcessW", `lpCommandLine`): `.exe` is appended to a name without an extension;
//!   a name with a path is taken against the drive's root or the working directory
//!   (`C:\` by default); a bare name is searched in the working directory, `System32`,
//!   `System`, the Windows directory, then the image's `PATH`; names compare
//!   case-insensitively; `C:\app\x.exe` is `Files/app/x.exe` in a Windows layer. `#!` means
//!   nothing there: a script is no Windows program.
//!
//! A file in a layer that was not read, or below one, is unknown: no verdict, never a guess.

use std::collections::{BTreeMap, BTreeSet};

use super::scan::{Targets, parent};
pub use super::view::LayerState;
use super::view::{FsNode, View, Walked};
use crate::binary::{BinaryFormat, BinaryInfo, dll};
use crate::graph::model::{EntryCheck, LookupOutcome, Program};
use crate::manifest::RunConfig;

/// containerd's `PATH` for a Linux container whose image sets no environment
/// (`oci/spec_opts.go`, `defaultUnixEnv`).
pub const DEFAULT_LINUX_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
/// Most `#!` scripts one `execve` runs in a row: the kernel's loop hands each script's
/// interpreter to the next round and fails past depth 5 (`fs/exec.c`, `exec_binprm`:
/// `ELOOP`), so the sixth file must be a binary.
pub const MAX_SCRIPTS: usize = 5;
/// Most programs in one chain (the command's, interpreters, `env NAME`): past it the chain is
/// not followed (an `env` that runs a script whose interpreter is `env` again…).
pub const MAX_PROGRAMS: usize = 16;

/// How the program of one image is looked up: from its config, before any layer is read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LookupPlan {
    /// Windows rules (else Linux).
    pub windows: bool,
    /// `Entrypoint` then `Cmd`.
    pub command: Vec<String>,
    /// The working directory: its key (Windows) or its path (Linux, `/` when unset).
    working_dir: String,
    /// The directories searched for a bare name after the working directory (Windows: the
    /// system directories then `PATH`, as keys; Linux: the `PATH` elements, as written).
    search: Vec<String>,
}

/// One candidate file: the path walked (a key on Windows; a path on Linux, absolute or
/// against the working directory) and how the image names it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Candidate {
    path: String,
    shown: String,
    /// Found through a relative `PATH` element (Go's `LookPath` then answers `ErrDot`).
    relative: bool,
}

/// The next thing the lookup needs, or its end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LookupStep {
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

/// Who looks a program up, and so how.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Caller {
    /// runc, with Go's `exec.LookPath`.
    Runc,
    /// The kernel, for a `#!` interpreter (`open_exec`: the path as it is).
    Kernel,
    /// `env`, with `execvp`: `PATH` for a bare name, relative elements allowed.
    Execvp,
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
/// the root): a lexical clean, as Windows and Go's `filepath.Join` do.
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

impl LookupPlan {
    /// The plan for an image of `os` with these run settings.
    pub fn new(os: &str, run: &RunConfig) -> LookupPlan {
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
            LookupPlan {
                windows,
                command,
                working_dir,
                search,
            }
        } else {
            let working_dir = match run.working_dir.as_str() {
                "" => "/".to_string(),
                wd => wd.to_string(),
            };
            let path = match run.env_var("PATH", false) {
                Some(p) => Some(p.to_string()),
                None if run.env.is_empty() => Some(DEFAULT_LINUX_PATH.to_string()),
                None => None,
            };
            let search = path
                .as_deref()
                .map(|p| p.split(':').map(str::to_string).collect())
                .unwrap_or_default();
            LookupPlan {
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

    /// The key a Linux path names, read lexically (what the first read of the layers
    /// probes; the walk follows links and `..` as the kernel does).
    fn linux_key(&self, path: &str) -> String {
        let base = if path.starts_with('/') {
            ""
        } else {
            &self.working_dir
        };
        clean(base.split('/').chain(path.split('/')))
    }

    /// The Linux candidate for the path `path`.
    fn linux_candidate(&self, path: String, relative: bool) -> Candidate {
        Candidate {
            shown: self.shown(&self.linux_key(&path)),
            path,
            relative,
        }
    }

    /// The files `name` may be, in the order `caller` tries them.
    fn candidates(&self, name: &str, caller: Caller) -> Vec<Candidate> {
        let mut out = if self.windows {
            self.windows_candidates(name)
        } else if name.contains('/') || caller == Caller::Kernel {
            vec![self.linux_candidate(name.to_string(), false)]
        } else {
            // Go's LookPath: filepath.Join(dir, name), which cleans lexically ("" is ".").
            self.search
                .iter()
                .map(|dir| {
                    let relative = !dir.starts_with('/');
                    let path = match (relative, caller) {
                        (false, _) => format!("/{}", clean(dir.split('/').chain([name]))),
                        (true, Caller::Runc) => clean(dir.split('/').chain([name])),
                        (true, _) => join(dir, name),
                    };
                    self.linux_candidate(path, relative)
                })
                .collect()
        };
        let mut seen = BTreeSet::new();
        out.retain(|c| seen.insert(c.path.clone()));
        out
    }

    /// The Windows candidates for `name` (keys).
    fn windows_candidates(&self, name: &str) -> Vec<Candidate> {
        let last = name.rsplit(['\\', '/']).next().unwrap_or(name);
        let name = if last.contains('.') {
            name.to_string()
        } else {
            format!("{name}.exe")
        };
        let keys = if let Some(key) = windows_key(&name) {
            vec![key]
        } else if name.contains(['\\', '/', ':']) {
            let rest = name.split_once(':').map_or(name.as_str(), |(_, r)| r);
            vec![clean(self.working_dir.split('/').chain(rest.split(['\\', '/']))).to_lowercase()]
        } else {
            std::iter::once(&self.working_dir)
                .chain(&self.search)
                .map(|dir| join(dir, &name.to_lowercase()))
                .collect()
        };
        keys.into_iter()
            .map(|key| Candidate {
                shown: self.shown(&key),
                path: key,
                relative: false,
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
        for c in self.candidates(name, Caller::Runc) {
            let key = if self.windows {
                targets.dirs.extend(self.dll_dirs(&c.path));
                c.path
            } else {
                self.linux_key(&c.path)
            };
            targets.probe.insert(key);
        }
        targets
    }
}

/// Where one candidate leads.
enum Lookup {
    /// A program: the key its name reached, the entry holding its data.
    Found {
        at: String,
        layer: usize,
        key: String,
    },
    /// Nothing there.
    Missing,
    /// Something the runtime refuses to run, and why.
    CannotRun(String),
    /// Unknown: a layer that was not read could change it.
    Unknown(String),
}

/// Where `c` leads, and whether it can be run.
fn lookup(plan: &LookupPlan, view: &View, c: &Candidate) -> Lookup {
    let walked = if plan.windows {
        view.get(&c.path)
    } else {
        view.walk(&view.working_dir(&plan.working_dir), &c.path)
    };
    let (at, placed, node) = match walked {
        Walked::At(at, (placed, node)) => (at, *placed, node),
        other => {
            if let Some(why) = view.unread_above(None) {
                return Lookup::Unknown(why);
            }
            return match other {
                Walked::Refused(why) => Lookup::CannotRun(format!("{}: {why}", c.shown)),
                _ => Lookup::Missing,
            };
        }
    };
    if let Some(why) = view.unread_above(Some(placed)) {
        return Lookup::Unknown(why);
    }
    let shown = plan.shown(&at);
    match node {
        FsNode::File { layer, key, mode } if plan.windows || mode & 0o111 != 0 => Lookup::Found {
            at,
            layer: *layer,
            key: key.clone(),
        },
        _ if plan.windows => Lookup::Missing,
        FsNode::File { mode, .. } => Lookup::CannotRun(format!(
            "{shown} has mode {mode:04o}, no execute bit: execve fails with EACCES (even for \
             root, fs/namei.c generic_permission)"
        )),
        FsNode::Dir => {
            Lookup::CannotRun(format!("{shown} is a directory: execve fails with EACCES"))
        }
        _ => Lookup::CannotRun(format!(
            "{shown} is not a regular file: execve fails with EACCES"
        )),
    }
}

/// The lookup of one program by `caller`: for a `PATH` search, the first candidate that
/// can run (Go's `LookPath` and `execvp` skip the others); an unknown candidate before it
/// makes the whole lookup unknown.
fn find(plan: &LookupPlan, view: &View, name: &str, caller: Caller) -> (Vec<String>, Lookup) {
    let candidates = plan.candidates(name, caller);
    let looked_up = candidates.iter().map(|c| c.shown.clone()).collect();
    if let [only] = candidates.as_slice()
        && (caller == Caller::Kernel || name.contains('/'))
    {
        return (looked_up, lookup(plan, view, only));
    }
    let mut refused: Vec<String> = Vec::new();
    for c in &candidates {
        match lookup(plan, view, c) {
            Lookup::Missing => {}
            Lookup::CannotRun(why) => refused.push(why),
            Lookup::Found { at, .. } if c.relative && caller == Caller::Runc => {
                let why = format!(
                    "{} was found through the relative PATH element of {}: Go's exec.LookPath \
                     refuses it (ErrDot) and runc with it",
                    plan.shown(&at),
                    c.path
                );
                return (looked_up, Lookup::CannotRun(why));
            }
            other => return (looked_up, other),
        }
    }
    let found = match refused.is_empty() {
        true => Lookup::Missing,
        false => Lookup::CannotRun(format!(
            "no candidate can run, the PATH search skips them: {}",
            refused.join("; ")
        )),
    };
    (looked_up, found)
}

/// The DLLs the PE program `key` imports that no directory of the loader's search holds.
fn missing_dlls(
    plan: &LookupPlan,
    view: &View,
    key: &str,
    binary: &BinaryInfo,
) -> Option<Result<Vec<String>, String>> {
    let BinaryFormat::Pe(pe) = &binary.format else {
        return None;
    };
    if let Some(why) = view.unread_above(None) {
        return Some(Err(format!("{why}: the DLLs it holds are unknown")));
    }
    let dirs = plan.dll_dirs(key);
    let provided: BTreeSet<String> = view
        .files_in(&dirs)
        .map(|k| k.rsplit('/').next().unwrap_or(k).to_string())
        .collect();
    Some(Ok(dll::missing(&pe.imports, &provided)))
}

/// The program a found file hands over to, if any: a Linux script's interpreter (by the
/// kernel, or past the depth the kernel allows: `ELOOP`), then the NAME of
/// `/usr/bin/env NAME` (by `execvp`).
struct Chain {
    /// `#!` scripts run so far in this `execve`.
    scripts: usize,
    /// The name `env` runs once the interpreters end.
    env_arg: Option<String>,
}

/// What comes after a program: the next name, who looks it up, or a refusal.
enum Next {
    Program(String, Caller),
    Refused(String, String),
    End,
}

impl Chain {
    fn next(&mut self, plan: &LookupPlan, binary: &BinaryInfo) -> Next {
        if let (BinaryFormat::Script { interpreter, args }, false) = (&binary.format, plan.windows)
        {
            if self.scripts == MAX_SCRIPTS {
                return Next::Refused(
                    interpreter.clone(),
                    format!(
                        "ELOOP: the kernel runs at most {MAX_SCRIPTS} #! interpreters in a \
                         row, this would be one more (fs/exec.c exec_binprm)"
                    ),
                );
            }
            self.scripts += 1;
            let env = interpreter.rsplit('/').next() == Some("env");
            self.env_arg = args
                .as_deref()
                .and_then(|a| a.split_whitespace().next())
                .filter(|a| env && !a.starts_with('-'))
                .map(str::to_string);
            return Next::Program(interpreter.clone(), Caller::Kernel);
        }
        match self.env_arg.take() {
            Some(arg) => {
                self.scripts = 0;
                Next::Program(arg, Caller::Execvp)
            }
            None => Next::End,
        }
    }
}

/// One step of the lookup over the layers read so far and the extra headers read
/// (`probed`: layer index and key).
pub fn resolve(
    plan: &LookupPlan,
    layers: &[LayerState],
    probed: &BTreeMap<(usize, String), BinaryInfo>,
) -> LookupStep {
    let view = View::new(layers, plan.windows);
    let mut programs: Vec<Program> = Vec::new();
    let mut next = plan
        .command
        .first()
        .map_or(Next::End, |n| Next::Program(n.clone(), Caller::Runc));
    let mut chain = Chain {
        scripts: 0,
        env_arg: None,
    };
    while programs.len() < MAX_PROGRAMS {
        let (current, caller) = match std::mem::replace(&mut next, Next::End) {
            Next::End => break,
            Next::Refused(name, why) => {
                programs.push(Program {
                    name,
                    looked_up: vec![],
                    outcome: LookupOutcome::CannotRun(why),
                });
                break;
            }
            Next::Program(name, caller) => (name, caller),
        };
        let (looked_up, found) = find(plan, &view, &current, caller);
        let outcome = match found {
            Lookup::Missing => LookupOutcome::Missing,
            Lookup::CannotRun(why) => LookupOutcome::CannotRun(why),
            Lookup::Unknown(why) => LookupOutcome::NotChecked(why),
            Lookup::Found { at, layer, key } => {
                let binary = match layers.get(layer) {
                    Some(LayerState::Read(scan)) => scan.probed.get(&key),
                    _ => None,
                }
                .or_else(|| probed.get(&(layer, key.clone())));
                let Some(binary) = binary else {
                    return LookupStep::Need { layer, key };
                };
                next = chain.next(plan, binary);
                LookupOutcome::Found {
                    path: plan.shown(&at),
                    dlls: missing_dlls(plan, &view, &at, binary),
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
    LookupStep::Done(EntryCheck {
        command: plan.command.clone(),
        programs,
    })
}

#[cfg(test)]
mod tests;
