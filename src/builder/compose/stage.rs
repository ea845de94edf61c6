//! Whether a Windows stage can be composed without Buildah, and what composing it takes
//! (pure): the stage must be `FROM <the planned base>` plus only `COPY`/`ADD` (local files or
//! `--from=` a Linux stage; no URL, no archive, no heredoc), `ENV`, `USER`, `ENTRYPOINT`, `CMD`,
//! `LABEL`, `WORKDIR` and `ARG` (no `--chown`/`--chmod`), with no Windows stage before it. Then the files it adds are
//! built by Buildah from a Containerfile of the stages before it plus a `FROM scratch` stage of
//! its `COPY`/`ADD`/`WORKDIR` (Buildah's own copy semantics, no base pulled, no mount; Windows
//! destinations placed by [`super::paths`]), and its
//! other instructions become [`Edit`]s of the base's config (the `config` module).

use std::collections::BTreeMap;

use super::lex;
use super::paths::to_root;
use crate::builder::containerfile::{Containerfile, Instruction, Stage, escape_char};

/// One change a composed stage makes to the base's config. Words are kept as written (quotes,
/// escapes, variables): they are read by [`super::lex::word`] against the config when applied,
/// as Docker reads them against the image's environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Edit {
    /// `ENV`: name/value pairs.
    Env(Vec<(String, String)>),
    /// `USER`.
    User(String),
    /// `ENTRYPOINT`.
    Entrypoint(StageCommand),
    /// `CMD`.
    Cmd(StageCommand),
    /// `LABEL`: name/value pairs.
    Labels(Vec<(String, String)>),
    /// `WORKDIR`.
    Workdir(String),
}

/// The command of an `ENTRYPOINT` or `CMD`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StageCommand {
    /// The JSON form: the arguments as given.
    Exec(Vec<String>),
    /// The shell form: run by the image's `Shell` (the base's, else Docker's Windows default
    /// `cmd /S /C`), the text as one argument.
    Shell(String),
}

/// One instruction of the stage, for the config's history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistoryStep {
    /// The instruction as written (`COPY --from=builder /out/csi.exe /csi.exe`).
    pub text: String,
    /// Whether it adds files (`COPY`/`ADD`: the stage's one layer) or only sets config.
    pub files: bool,
}

/// A Windows stage that can be composed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StagePlan {
    /// The Containerfile Buildah builds the stage's files from: the stages before it, then
    /// `FROM scratch` with its `ARG`/`ENV`/`WORKDIR`/`COPY`/`ADD`, Windows paths written as
    /// the Linux paths under which the layer writer puts them in `Files/`.
    pub files_containerfile: String,
    /// The config edits, in order.
    pub edits: Vec<Edit>,
    /// The stage's `ARG`s with their values (build arg, else default).
    pub args: BTreeMap<String, String>,
    /// The stage's instructions but `ARG`, for the history.
    pub steps: Vec<HistoryStep>,
    /// The Containerfile's escape character.
    pub escape: char,
}

/// How a Windows stage is made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Composed without Buildah.
    Compose(StagePlan),
    /// Built by Buildah, for this reason.
    Buildah(String),
}

/// Extensions `ADD` unpacks: such a source is not composed.
const ARCHIVES: [&str; 9] = [
    ".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz", ".tar.zst", ".gz",
];

/// `K=V K2="v 2"` pairs as written; the legacy `K V…` form too when `legacy` (`ENV`). Each
/// word is checked to read ([`lex::word`]) so that a stage whose words Docker would read and
/// imgcheck cannot is built by Buildah.
fn pairs(args: &str, legacy: bool, escape: char) -> Result<Vec<(String, String)>, String> {
    let raw = lex::split(args, escape);
    let first = raw.first().map(String::as_str).unwrap_or("");
    let out = if legacy && !first.contains('=') {
        let value = args.trim_start()[first.len()..].trim();
        if value.is_empty() {
            return Err(format!("'{first}' has no value"));
        }
        vec![(first.to_string(), value.to_string())]
    } else {
        raw.iter()
            .map(|w| match w.split_once('=') {
                Some((k, v)) if !k.is_empty() => Ok((k.to_string(), v.to_string())),
                _ => Err(format!("'{w}' is not NAME=VALUE")),
            })
            .collect::<Result<_, _>>()?
    };
    for (k, v) in &out {
        readable(k, escape)?;
        readable(v, escape)?;
    }
    Ok(out)
}

/// Whether a word reads (its variables unknown here).
fn readable(word: &str, escape: char) -> Result<(), String> {
    lex::word(word, escape, &BTreeMap::new())
        .map(|_| ())
        .map_err(|e| format!("'{word}': {e}"))
}

/// `ENTRYPOINT`/`CMD`: a JSON array as written, else the shell form.
fn command(args: &str) -> StageCommand {
    match serde_json::from_str::<Vec<String>>(args) {
        Ok(v) => StageCommand::Exec(v),
        Err(_) => StageCommand::Shell(args.to_string()),
    }
}

/// A `COPY`/`ADD` flag a composed stage cannot honour, and why.
const REFUSED_FLAGS: [(&str, &str); 2] = [
    (
        "--chown",
        "on Windows it names the owner in the file's security descriptor, which imgcheck \
         writes fixed",
    ),
    (
        "--chmod",
        "Windows files have no mode bits; their access is the security descriptor",
    ),
];

/// What the files stage needs to place the paths of the Windows stage: the current WORKDIR
/// (`None`: the base's, not known before the base's config is read) and the values of the
/// variables known without the base's config.
struct Place {
    cwd: Option<String>,
    known: BTreeMap<String, String>,
    escape: char,
}

impl Place {
    /// A destination or WORKDIR, read and placed under the root.
    fn path(&self, raw: &str) -> Result<String, String> {
        let (path, missing) = lex::word_and_missing(raw, self.escape, &self.known)
            .map_err(|e| format!("'{raw}': {e}"))?;
        if let Some(name) = missing.first() {
            return Err(format!(
                "'{raw}' uses ${name}, which the stage does not set (the base's config may)"
            ));
        }
        to_root(&path, self.cwd.as_deref()).map_err(|e| e.to_string())
    }

    /// A placed path as one word of the files stage's Containerfile.
    fn quoted(&self, path: &str) -> String {
        let mut out = String::new();
        for c in path.chars() {
            if c.is_whitespace() || matches!(c, '"' | '\'' | '$') || c == self.escape {
                out.push(self.escape);
            }
            out.push(c);
        }
        out
    }

    /// `ENV` pairs of the stage: a value read from known values only is known after it.
    fn env(&mut self, pairs: &[(String, String)]) {
        let mut read = Vec::new();
        for (k, v) in pairs {
            let known = lex::word_and_missing(k, self.escape, &self.known)
                .ok()
                .zip(lex::word_and_missing(v, self.escape, &self.known).ok())
                .filter(|((_, mk), (_, mv))| mk.is_empty() && mv.is_empty());
            read.push((k, known));
        }
        for (k, known) in read {
            match known {
                Some(((k, _), (v, _))) => self.known.insert(k, v),
                None => self.known.remove(k.as_str()),
            };
        }
    }
}

/// The line of the files stage for a `COPY`/`ADD`, its destination placed as Docker on
/// Windows places it; the reason it cannot be composed otherwise. `linux` says whether a
/// `--from` value names an earlier Linux stage.
fn copy_line(
    ins: &Instruction,
    linux: &dyn Fn(&str) -> bool,
    place: &Place,
) -> Result<String, String> {
    let at = format!("{} at line {}", ins.keyword, ins.line);
    if ins.args.contains("<<") {
        return Err(format!("{at} has a heredoc"));
    }
    let args = ins.args.trim();
    let raw = lex::split(args, place.escape);
    let flags: Vec<&String> = raw.iter().take_while(|w| w.starts_with("--")).collect();
    for w in &flags {
        if let Some((flag, why)) = REFUSED_FLAGS.iter().find(|(f, _)| w.starts_with(f)) {
            return Err(format!("{at} has {flag}: {why}"));
        }
        if let Some(from) = w.strip_prefix("--from=")
            && !linux(from)
        {
            return Err(format!(
                "{at} copies from '{from}', not an earlier Linux stage"
            ));
        }
    }
    let rest = args[raw_len(args, &flags)..].trim();
    let json = serde_json::from_str::<Vec<String>>(rest).ok();
    let mut words: Vec<String> = match &json {
        Some(v) => v.clone(),
        None => raw[flags.len()..].to_vec(),
    };
    let dest = words.pop().filter(|_| !words.is_empty());
    let dest = dest.ok_or_else(|| format!("{at} names no source and destination"))?;
    if ins.keyword == "ADD"
        && let Some(p) = add_problem(&words)
    {
        return Err(format!("{at} {p}"));
    }
    let placed = if json.is_some() {
        to_root(&dest, place.cwd.as_deref()).map_err(|e| e.to_string())
    } else {
        place.path(&dest)
    }
    .map_err(|e| format!("{at}: {e}"))?;
    let head: Vec<String> = flags.iter().map(|f| f.to_string()).collect();
    let line = match json {
        Some(_) => {
            words.push(placed);
            let array = serde_json::to_string(&words).map_err(|e| format!("{at}: {e}"))?;
            head.into_iter().chain([array]).collect::<Vec<_>>()
        }
        None => head
            .into_iter()
            .chain(words)
            .chain([place.quoted(&placed)])
            .collect(),
    };
    Ok(format!("{} {}", ins.keyword, line.join(" ")))
}

/// The length of `args` up to the end of the last of `flags` (split from its start).
fn raw_len(args: &str, flags: &[&String]) -> usize {
    let mut at = 0;
    for f in flags {
        at = args[at..].find(f.as_str()).map_or(at, |i| at + i + f.len());
    }
    at
}

/// Why an `ADD` of these sources is not composed.
fn add_problem(sources: &[String]) -> Option<String> {
    if let Some(url) = sources
        .iter()
        .find(|s| s.contains("://") || s.starts_with("git@"))
    {
        return Some(format!("fetches {url}"));
    }
    sources
        .iter()
        .find(|s| {
            let lower = s.to_ascii_lowercase();
            ARCHIVES.iter().any(|ext| lower.ends_with(ext))
        })
        .map(|a| format!("may unpack the archive {a}"))
}

/// The `ARG`s an instruction declares, with their values: the build arg, else the default.
fn declare(args: &str, build_args: &[(String, String)], into: &mut BTreeMap<String, String>) {
    for decl in args.split_whitespace() {
        let (name, default) = match decl.split_once('=') {
            Some((n, d)) => (n, Some(d.trim_matches('"').to_string())),
            None => (decl, None),
        };
        let given = build_args.iter().rev().find(|(k, _)| k == name);
        if let Some(v) = given.map(|(_, v)| v.clone()).or(default) {
            into.insert(name.to_string(), v);
        }
    }
}

/// What the stage's instructions make: the edits and the lines of the files stage.
struct Body {
    edits: Vec<Edit>,
    files: Vec<String>,
    args: BTreeMap<String, String>,
    steps: Vec<HistoryStep>,
}

/// One instruction read: its edit and its line in the files stage, if any.
fn instruction(
    ins: &Instruction,
    args: &str,
    linux: &dyn Fn(&str) -> bool,
    place: &mut Place,
) -> Result<(Option<Edit>, Option<String>), String> {
    let at = format!("{} at line {}", ins.keyword, ins.line);
    let escape = place.escape;
    let line = Some(format!("{} {args}", ins.keyword));
    Ok(match ins.keyword.as_str() {
        "COPY" | "ADD" => (None, Some(copy_line(ins, linux, place)?)),
        "ARG" => (None, line),
        "ENV" => {
            let p = pairs(args, true, escape).map_err(|e| format!("{at}: {e}"))?;
            place.env(&p);
            (Some(Edit::Env(p)), line)
        }
        "LABEL" => {
            let p = pairs(args, false, escape).map_err(|e| format!("{at}: {e}"))?;
            (Some(Edit::Labels(p)), None)
        }
        "USER" => {
            readable(args, escape).map_err(|e| format!("{at}: {e}"))?;
            (Some(Edit::User(args.to_string())), None)
        }
        "WORKDIR" => {
            readable(args, escape).map_err(|e| format!("{at}: {e}"))?;
            let placed = match place.path(args) {
                Ok(p) => Some(p),
                Err(_) if place.cwd.is_none() => None,
                Err(e) => return Err(format!("{at}: {e}")),
            };
            let line = placed
                .as_ref()
                .map(|p| format!("WORKDIR {}", place.quoted(p)));
            place.cwd = placed;
            (Some(Edit::Workdir(args.to_string())), line)
        }
        "ENTRYPOINT" => (Some(Edit::Entrypoint(command(args))), None),
        "CMD" => (Some(Edit::Cmd(command(args))), None),
        "RUN" => return Err(format!("{at}: a command must run in the stage")),
        other => return Err(format!("{at}: {other} is not composed")),
    })
}

/// Reads the stage's instructions; the first that cannot be composed is the reason.
fn body(
    stage: &Stage,
    build_args: &[(String, String)],
    linux: &dyn Fn(&str) -> bool,
    escape: char,
) -> Result<Body, String> {
    let mut b = Body {
        edits: Vec::new(),
        files: Vec::new(),
        args: BTreeMap::new(),
        steps: Vec::new(),
    };
    let mut place = Place {
        cwd: None,
        known: BTreeMap::new(),
        escape,
    };
    for ins in &stage.body {
        let args = ins.args.trim();
        if ins.keyword == "ARG" {
            declare(args, build_args, &mut b.args);
            place.known.extend(b.args.clone());
        }
        let (edit, line) = instruction(ins, args, linux, &mut place)?;
        b.files.extend(line);
        b.edits.extend(edit);
        if ins.keyword != "ARG" {
            b.steps.push(HistoryStep {
                text: format!("{} {args}", ins.keyword),
                files: matches!(ins.keyword.as_str(), "COPY" | "ADD"),
            });
        }
    }
    Ok(b)
}

/// Decides how the last stage of the Windows Containerfile `text` is made, for a job whose
/// base is `base` and whose build args are `build_args`.
pub fn decide(text: &str, base: &str, build_args: &[(String, String)]) -> Decision {
    match plan(text, base, build_args) {
        Ok(p) => Decision::Compose(p),
        Err(why) => Decision::Buildah(why),
    }
}

fn plan(text: &str, base: &str, build_args: &[(String, String)]) -> Result<StagePlan, String> {
    let file = Containerfile::parse(text, true);
    let (last, earlier) = file
        .stages
        .split_last()
        .ok_or_else(|| "no FROM instruction".to_string())?;
    if let Some(w) = earlier.iter().find(|s| s.windows) {
        return Err(format!(
            "the Windows stage at line {} comes before the last one (Buildah would pull its base)",
            w.line
        ));
    }
    let mut globals: BTreeMap<String, String> = file
        .global_args
        .iter()
        .filter_map(|(k, v)| v.clone().map(|v| (k.clone(), v)))
        .collect();
    globals.extend(build_args.iter().cloned());
    let from = lex::word(&last.image, escape_char(text), &globals)
        .map_err(|e| format!("the last stage's FROM {}: {e}", last.image))?;
    if from != base {
        return Err(format!(
            "the last stage is FROM {from}, not the planned base {base}"
        ));
    }
    let linux = |from: &str| file.stage(from).is_some_and(|s| s.index < last.index);
    let b = body(last, build_args, &linux, escape_char(text))?;
    let head: Vec<&str> = text.lines().take(last.line.saturating_sub(1)).collect();
    let files_containerfile = format!(
        "{}\n# The files of the Windows stage (line {}), composed by imgcheck\nFROM scratch\n{}\n",
        head.join("\n"),
        last.line,
        b.files.join("\n")
    );
    Ok(StagePlan {
        files_containerfile,
        edits: b.edits,
        args: b.args,
        steps: b.steps,
        escape: escape_char(text),
    })
}

#[cfg(test)]
mod tests;
