//! Whether a Windows stage can be composed without Buildah, and what composing it takes
//! (pure): the stage must be `FROM <the planned base>` plus only `COPY`/`ADD` (local files or
//! `--from=` a Linux stage; no URL, no archive, no heredoc), `ENV`, `USER`, `ENTRYPOINT`, `CMD`,
//! `LABEL`, `WORKDIR` and `ARG`, with no Windows stage before it. Then the files it adds are
//! built by Buildah from a Containerfile of the stages before it plus a `FROM scratch` stage of
//! its `COPY`/`ADD`/`WORKDIR` (Buildah's own copy semantics, no base pulled, no mount), and its
//! other instructions become [`Edit`]s of the base's config ([`super::config`]).

use std::collections::BTreeMap;

use crate::build::containerfile::{Containerfile, Instruction, Stage, escape_char};

/// One change a composed stage makes to the base's config, values as written (variables are
/// expanded against the config when applied).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Edit {
    /// `ENV`: name/value pairs.
    Env(Vec<(String, String)>),
    /// `USER`.
    User(String),
    /// `ENTRYPOINT`, exec form (a shell form is `cmd /S /C …`).
    Entrypoint(Vec<String>),
    /// `CMD`, exec form (a shell form is `cmd /S /C …`).
    Cmd(Vec<String>),
    /// `LABEL`: name/value pairs.
    Labels(Vec<(String, String)>),
    /// `WORKDIR`.
    Workdir(String),
}

/// A Windows stage that can be composed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StagePlan {
    /// The Containerfile Buildah builds the stage's files from: the stages before it, then
    /// `FROM scratch` with its `ARG`/`ENV`/`WORKDIR`/`COPY`/`ADD`.
    pub files_containerfile: String,
    /// The config edits, in order.
    pub edits: Vec<Edit>,
    /// The stage's `ARG`s with their values (build arg, else default).
    pub args: BTreeMap<String, String>,
    /// The stage's instructions, for the history entry.
    pub created_by: String,
}

/// How a Windows stage is made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Composed without Buildah.
    Compose(StagePlan),
    /// Built by Buildah, for this reason.
    Buildah(String),
}

/// Shell windows use for the shell form of `ENTRYPOINT`/`CMD` (Docker's default on Windows).
const WINDOWS_SHELL: [&str; 3] = ["cmd", "/S", "/C"];

/// Extensions `ADD` unpacks: such a source is not composed.
const ARCHIVES: [&str; 9] = [
    ".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz", ".tar.zst", ".gz",
];

/// Replaces `$NAME` and `${NAME}` with their values in `vars` (unknown names become empty, as
/// in a Containerfile).
pub fn expand(s: &str, vars: &BTreeMap<String, String>) -> String {
    let mut out = String::new();
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '$' {
            out.push(c);
            continue;
        }
        let braced = chars.peek() == Some(&'{');
        if braced {
            chars.next();
        }
        let mut name = String::new();
        while let Some(&n) = chars.peek() {
            if n.is_ascii_alphanumeric() || n == '_' {
                name.push(n);
                chars.next();
            } else {
                break;
            }
        }
        if braced && chars.peek() == Some(&'}') {
            chars.next();
        }
        if name.is_empty() && !braced {
            out.push('$');
        } else {
            out.push_str(vars.get(&name).map_or("", String::as_str));
        }
    }
    out
}

/// Splits on white space, keeping quoted parts together (quotes removed), as a Containerfile
/// does: the escape character (`\`, or the `# escape=` one) escapes any character outside
/// quotes, only `"`, `$` and itself inside double quotes, nothing inside single quotes.
fn words(s: &str, escape: char) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let (mut quote, mut started, mut chars) = (None, false, s.chars().peekable());
    while let Some(c) = chars.next() {
        match (quote, c) {
            (None, c) if c.is_whitespace() => {
                if started {
                    out.push(std::mem::take(&mut word));
                    started = false;
                }
            }
            (None, '"' | '\'') => (quote, started) = (Some(c), true),
            (Some(q), c) if c == q => quote = None,
            (Some('\''), c) => word.push(c),
            (Some(_), e) if e == escape => match chars.peek() {
                Some(&n) if n == '"' || n == '$' || n == escape => {
                    word.push(n);
                    chars.next();
                }
                _ => word.push(e),
            },
            (None, e) if e == escape => {
                word.extend(chars.next());
                started = true;
            }
            (_, c) => {
                word.push(c);
                started = true;
            }
        }
    }
    if started {
        out.push(word);
    }
    out
}

/// `K=V K2="v 2"` pairs; the legacy `K V…` form when `legacy` (ENV).
fn pairs(args: &str, legacy: bool, escape: char) -> Result<Vec<(String, String)>, String> {
    let first = args.split_whitespace().next().unwrap_or("");
    if legacy && !first.contains('=') {
        let value = args[first.len()..].trim();
        return Ok(vec![(first.to_string(), value.to_string())]);
    }
    words(args, escape)
        .into_iter()
        .map(|w| match w.split_once('=') {
            Some((k, v)) if !k.is_empty() => Ok((k.to_string(), v.to_string())),
            _ => Err(format!("'{w}' is not NAME=VALUE")),
        })
        .collect()
}

/// The exec form of `ENTRYPOINT`/`CMD`: a JSON array as written, else the shell form.
fn command(args: &str) -> Vec<String> {
    if let Ok(v) = serde_json::from_str::<Vec<String>>(args) {
        return v;
    }
    let mut out: Vec<String> = WINDOWS_SHELL.iter().map(|s| s.to_string()).collect();
    out.push(args.to_string());
    out
}

/// Why a `COPY`/`ADD` cannot be composed; `None` when it can. `linux` says whether a `--from`
/// value names an earlier Linux stage.
fn copy_problem(ins: &Instruction, linux: &dyn Fn(&str) -> bool, escape: char) -> Option<String> {
    let at = format!("{} at line {}", ins.keyword, ins.line);
    if ins.args.contains("<<") {
        return Some(format!("{at} has a heredoc"));
    }
    let mut sources: Vec<String> = match serde_json::from_str::<Vec<String>>(&ins.args) {
        Ok(v) => v,
        Err(_) => words(&ins.args, escape),
    };
    for w in sources.iter().filter(|w| w.starts_with("--")) {
        if let Some(from) = w.strip_prefix("--from=")
            && !linux(from)
        {
            return Some(format!(
                "{at} copies from '{from}', not an earlier Linux stage"
            ));
        }
    }
    sources.retain(|w| !w.starts_with("--"));
    sources.pop();
    if ins.keyword == "ADD" {
        if let Some(url) = sources
            .iter()
            .find(|s| s.contains("://") || s.starts_with("git@"))
        {
            return Some(format!("{at} fetches {url}"));
        }
        if let Some(a) = sources.iter().find(|s| {
            let lower = s.to_ascii_lowercase();
            ARCHIVES.iter().any(|ext| lower.ends_with(ext))
        }) {
            return Some(format!("{at} may unpack the archive {a}"));
        }
    }
    None
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
    shown: Vec<String>,
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
        shown: Vec::new(),
    };
    for ins in &stage.body {
        let at = format!("{} at line {}", ins.keyword, ins.line);
        let args = ins.args.trim();
        let edit = match ins.keyword.as_str() {
            "COPY" | "ADD" => copy_problem(ins, linux, escape).map_or(Ok(None), Err)?,
            "ARG" => {
                declare(args, build_args, &mut b.args);
                None
            }
            "ENV" => Some(Edit::Env(
                pairs(args, true, escape).map_err(|e| format!("{at}: {e}"))?,
            )),
            "LABEL" => Some(Edit::Labels(
                pairs(args, false, escape).map_err(|e| format!("{at}: {e}"))?,
            )),
            "USER" => Some(Edit::User(args.to_string())),
            "WORKDIR" => Some(Edit::Workdir(args.to_string())),
            "ENTRYPOINT" => Some(Edit::Entrypoint(command(args))),
            "CMD" => Some(Edit::Cmd(command(args))),
            "RUN" => return Err(format!("{at}: a command must run in the stage")),
            other => return Err(format!("{at}: {other} is not composed")),
        };
        if matches!(
            ins.keyword.as_str(),
            "ARG" | "ENV" | "WORKDIR" | "COPY" | "ADD"
        ) {
            b.files.push(format!("{} {}", ins.keyword, args));
        }
        b.edits.extend(edit);
        b.shown.push(format!("{} {}", ins.keyword, args));
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
    let from = expand(&last.image, &globals);
    if from != base {
        return Err(format!(
            "the last stage is FROM {from}, not the planned base {base}"
        ));
    }
    let linux = |from: &str| file.stage(from).is_some_and(|s| s.index < last.index);
    let b = body(last, build_args, &linux, escape_char(text))?;
    let head: Vec<&str> = text.lines().take(last.line - 1).collect();
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
        created_by: b.shown.join("; "),
    })
}

#[cfg(test)]
mod tests;
