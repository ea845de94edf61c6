//! A small Containerfile reader and the lint rules for Windows builds with Buildah
//! (docs/buildah.md): no `RUN` in a Windows stage, `/Files/` on sources copied out of a Windows
//! stage, a Windows stage that is not `FROM scratch` and is based on `${WINDOWS_BASE}`, and
//! build args the file declares.
//!
//! Only what the rules need is parsed: instructions (with `\` continuations, comments and
//! heredocs skipped), `ARG` defaults before the first `FROM`, and stages.

use std::collections::BTreeMap;

/// One instruction, with the line it starts on (1-based).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Instruction {
    /// Line of the keyword.
    pub line: usize,
    /// The keyword, upper-cased (`FROM`, `RUN`, …).
    pub keyword: String,
    /// Everything after the keyword, continuation lines joined with a space.
    pub args: String,
}

/// The line-continuation character: `\\`, or what a leading `# escape=` parser directive sets
/// (Windows Containerfiles often use a backtick so paths can keep their backslashes).
pub fn escape_char(text: &str) -> char {
    for line in text.lines() {
        let t = line.trim();
        let Some(directive) = t.strip_prefix('#') else {
            break;
        };
        if let Some((key, value)) = directive.split_once('=')
            && key.trim().eq_ignore_ascii_case("escape")
            && let Some(c) = value.trim().chars().next()
        {
            return c;
        }
    }
    '\\'
}

/// Splits a Containerfile into instructions.
pub fn instructions(text: &str) -> Vec<Instruction> {
    let escape = escape_char(text);
    let mut out = Vec::new();
    let mut lines = text.lines().enumerate();
    while let Some((i, raw)) = lines.next() {
        let trimmed = raw.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let mut joined = String::new();
        let mut current = trimmed.to_string();
        loop {
            match current.strip_suffix(escape) {
                Some(head) => {
                    joined.push_str(head.trim_end());
                    joined.push(' ');
                    // Skip comment lines inside a continuation, as BuildKit does.
                    let next = loop {
                        match lines.next() {
                            Some((_, l)) if l.trim().starts_with('#') => continue,
                            Some((_, l)) => break Some(l.trim().to_string()),
                            None => break None,
                        }
                    };
                    match next {
                        Some(n) => current = n,
                        None => break,
                    }
                }
                None => {
                    joined.push_str(&current);
                    break;
                }
            }
        }
        let (keyword, args) = match joined.split_once(char::is_whitespace) {
            Some((k, a)) => (k.to_ascii_uppercase(), a.trim().to_string()),
            None => (joined.to_ascii_uppercase(), String::new()),
        };
        // Heredoc bodies (`RUN <<EOF` … `EOF`) are not instructions.
        if let Some(word) = heredoc_word(&args) {
            for (_, l) in lines.by_ref() {
                if l.trim() == word {
                    break;
                }
            }
        }
        out.push(Instruction {
            line: i + 1,
            keyword,
            args,
        });
    }
    out
}

fn heredoc_word(args: &str) -> Option<String> {
    let at = args.find("<<")?;
    let rest = args[at + 2..].trim_start_matches('-');
    let word: String = rest
        .trim_matches(|c| c == '"' || c == '\'')
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    (!word.is_empty()).then_some(word)
}

/// One `FROM` stage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stage {
    /// Position, from 0.
    pub index: usize,
    /// `AS` name, if any.
    pub name: Option<String>,
    /// The image as written (`${WINDOWS_BASE}`).
    pub image: String,
    /// The image with global `ARG` defaults substituted.
    pub resolved: String,
    /// `--platform=` value, if any.
    pub platform: Option<String>,
    /// Line of the `FROM`.
    pub line: usize,
    /// Whether the stage's filesystem is a Windows one.
    pub windows: bool,
    /// The stage's instructions after `FROM`.
    pub body: Vec<Instruction>,
}

/// A parsed Containerfile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Containerfile {
    /// `ARG`s before the first `FROM`, with their defaults.
    pub global_args: BTreeMap<String, Option<String>>,
    /// Every `ARG` name declared anywhere.
    pub declared_args: Vec<String>,
    /// The stages in order.
    pub stages: Vec<Stage>,
}

/// Replaces `${NAME}` and `$NAME` with `args` values that are known.
fn substitute(s: &str, args: &BTreeMap<String, Option<String>>) -> String {
    let mut out = s.to_string();
    for (name, value) in args {
        if let Some(v) = value {
            out = out.replace(&format!("${{{name}}}"), v);
            out = out.replace(&format!("${name}"), v);
        }
    }
    out
}

fn names_var(s: &str, var: &str) -> bool {
    s.contains(&format!("${{{var}}}"))
        || s.match_indices(&format!("${var}")).any(|(i, m)| {
            !s[i + m.len()..]
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
        })
}

/// Whether an image reference (ARG defaults substituted) is a Windows base image.
pub fn is_windows_image(image: &str) -> bool {
    let lower = image.to_ascii_lowercase();
    let repo = lower.split(['@']).next().unwrap_or("");
    let last = repo
        .rsplit('/')
        .next()
        .unwrap_or("")
        .split(':')
        .next()
        .unwrap_or("");
    lower.contains("mcr.microsoft.com/windows")
        || matches!(last, "nanoserver" | "servercore" | "windows" | "server")
}

impl Containerfile {
    /// Parses the text; `final_is_windows` marks the last stage as Windows whatever its base
    /// (the image a `Containerfile.windows` produces is a Windows image).
    pub fn parse(text: &str, final_is_windows: bool) -> Containerfile {
        let mut global_args = BTreeMap::new();
        let mut declared_args = Vec::new();
        let mut stages: Vec<Stage> = Vec::new();
        for ins in instructions(text) {
            match ins.keyword.as_str() {
                "ARG" => {
                    for decl in ins.args.split_whitespace() {
                        let (name, default) = match decl.split_once('=') {
                            Some((n, d)) => (n, Some(d.trim_matches('"').to_string())),
                            None => (decl, None),
                        };
                        declared_args.push(name.to_string());
                        if stages.is_empty() {
                            global_args.insert(name.to_string(), default);
                        }
                    }
                    if let Some(s) = stages.last_mut() {
                        s.body.push(ins);
                    }
                }
                "FROM" => {
                    let mut platform = None;
                    let mut words = Vec::new();
                    for w in ins.args.split_whitespace() {
                        match w.strip_prefix("--platform=") {
                            Some(p) => platform = Some(p.to_string()),
                            None if w.starts_with("--") => {}
                            None => words.push(w),
                        }
                    }
                    let image = words.first().copied().unwrap_or("").to_string();
                    let name = match words.as_slice() {
                        [_, as_kw, n, ..] if as_kw.eq_ignore_ascii_case("as") => {
                            Some(n.to_string())
                        }
                        _ => None,
                    };
                    let resolved = substitute(&image, &global_args);
                    let parent = stages
                        .iter()
                        .find(|s| s.name.as_deref() == Some(resolved.as_str()));
                    let windows = match (platform.as_deref(), parent) {
                        (Some(p), _) if p.starts_with("windows/") => true,
                        (Some(p), _) if !p.contains('$') => false,
                        (_, Some(parent)) => parent.windows,
                        _ => names_var(&image, "WINDOWS_BASE") || is_windows_image(&resolved),
                    };
                    stages.push(Stage {
                        index: stages.len(),
                        name,
                        image,
                        resolved,
                        platform,
                        line: ins.line,
                        windows,
                        body: Vec::new(),
                    });
                }
                _ => {
                    if let Some(s) = stages.last_mut() {
                        s.body.push(ins);
                    }
                }
            }
        }
        if final_is_windows && let Some(last) = stages.last_mut() {
            last.windows = true;
        }
        Containerfile {
            global_args,
            declared_args,
            stages,
        }
    }

    /// The stage a `--from=` value names (an `AS` name or an index), if it is a stage.
    pub fn stage(&self, from: &str) -> Option<&Stage> {
        self.stages
            .iter()
            .find(|s| s.name.as_deref() == Some(from))
            .or_else(|| from.parse::<usize>().ok().and_then(|i| self.stages.get(i)))
    }
}

/// A lint finding in a Containerfile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LintError {
    /// 1-based line, when the problem has one.
    pub line: Option<usize>,
    /// What is wrong and what to do.
    pub message: String,
}

/// Build args `imgcheck build` passes itself; a Containerfile need not declare them.
pub const AUTOMATIC_ARGS: [&str; 4] = ["WINDOWS_BASE", "OSVERSION", "TARGETARCH", "TARGETOS"];

/// Lints a Containerfile. `windows` is true for the Windows Containerfile of an image;
/// `build_args` are the plan's build args for it.
pub fn lint(text: &str, windows: bool, build_args: &[&str]) -> Vec<LintError> {
    let file = Containerfile::parse(text, windows);
    let Some(last) = file.stages.last() else {
        return vec![LintError {
            line: None,
            message: "no FROM instruction".to_string(),
        }];
    };
    let mut errors = run_in_windows_stages(&file);
    errors.extend(copies_from_windows(&file));
    if windows {
        errors.extend(windows_final_stage(&file, last));
    }
    errors.extend(undeclared_args(&file, build_args));
    errors
}

/// Buildah cannot `RUN` in a Windows stage.
fn run_in_windows_stages(file: &Containerfile) -> Vec<LintError> {
    let mut errors = Vec::new();
    for stage in file.stages.iter().filter(|s| s.windows) {
        let what = format!(
            "Windows stage {} (FROM {})",
            stage_label(stage),
            stage.image
        );
        for ins in stage.body.iter().filter(|i| i.keyword == "RUN") {
            errors.push(LintError {
                line: Some(ins.line),
                message: format!(
                    "RUN in {what}: Buildah cannot run commands in a Windows stage \
                     (fork/exec /bin/sh: no such file or directory); do this in a Linux \
                     stage and COPY the result"
                ),
            });
        }
    }
    errors
}

/// `COPY --from` / `ADD --from` a Windows stage or image names its sources under `/Files/`.
fn copies_from_windows(file: &Containerfile) -> Vec<LintError> {
    let mut errors = Vec::new();
    let copies = file
        .stages
        .iter()
        .flat_map(|s| &s.body)
        .filter(|i| i.keyword == "COPY" || i.keyword == "ADD");
    for ins in copies {
        let words: Vec<&str> = ins.args.split_whitespace().collect();
        let Some(from) = words.iter().find_map(|w| w.strip_prefix("--from=")) else {
            continue;
        };
        let source_windows = match file.stage(from) {
            Some(s) => s.windows,
            None => is_windows_image(&substitute(from, &file.global_args)),
        };
        if !source_windows {
            continue;
        }
        let paths: Vec<&str> = words
            .iter()
            .filter(|w| !w.starts_with("--"))
            .copied()
            .collect();
        let Some((_, sources)) = paths.split_last() else {
            continue;
        };
        for src in sources {
            let s = src.trim_matches(|c| c == '"' || c == '[' || c == ']' || c == ',');
            if !(s.starts_with("/Files/") || s.starts_with("Files/")) {
                let rooted = if s.starts_with('/') {
                    s.to_string()
                } else {
                    format!("/{s}")
                };
                errors.push(LintError {
                    line: Some(ins.line),
                    message: format!(
                        "{} --from={from} {s}: '{from}' is a Windows stage, whose root \
                         holds Files/ and Hives/; write the source as /Files{rooted}",
                        ins.keyword,
                    ),
                });
            }
        }
    }
    errors
}

/// The last stage of a Windows Containerfile is built on `${WINDOWS_BASE}`, declared before
/// the first `FROM`.
fn windows_final_stage(file: &Containerfile, last: &Stage) -> Option<LintError> {
    let message = if last.resolved.eq_ignore_ascii_case("scratch") {
        "the Windows stage is FROM scratch: the image would have no \
         os.version and match every Windows host; use FROM ${WINDOWS_BASE}"
            .to_string()
    } else if !names_var(&last.image, "WINDOWS_BASE") {
        format!(
            "the Windows stage is FROM {}, so the plan's Windows base (and build) is \
             ignored; use FROM ${{WINDOWS_BASE}} with ARG WINDOWS_BASE before the first FROM",
            last.image
        )
    } else if !file.global_args.contains_key("WINDOWS_BASE") {
        "FROM ${WINDOWS_BASE} needs 'ARG WINDOWS_BASE' before the first FROM".to_string()
    } else {
        return None;
    };
    Some(LintError {
        line: Some(last.line),
        message,
    })
}

/// Every build arg of the plan is declared by an `ARG`.
fn undeclared_args(file: &Containerfile, build_args: &[&str]) -> Vec<LintError> {
    build_args
        .iter()
        .filter(|arg| !file.declared_args.iter().any(|d| d == *arg))
        .map(|arg| LintError {
            line: None,
            message: format!(
                "build arg {arg} from the plan is not declared by any ARG here (typo?)"
            ),
        })
        .collect()
}

fn stage_label(stage: &Stage) -> String {
    match &stage.name {
        Some(n) => format!("'{n}'"),
        None => format!("#{}", stage.index + 1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"# syntax comment
ARG BUILDER=busybox
ARG WINDOWS_BASE=mcr.microsoft.com/windows/nanoserver:ltsc2022
ARG OSVERSION=ltsc2022
FROM mcr.microsoft.com/windows/servercore:${OSVERSION} AS core
FROM --platform=linux/amd64 ${BUILDER} AS builder
ARG TARGETARCH
RUN mkdir -p /out && \
    # a comment inside a continuation
    echo hi > /out/csi.exe
FROM ${WINDOWS_BASE}
COPY --from=builder /out/csi.exe /csi.exe
COPY --from=core /Files/Windows/System32/netapi32.dll /Windows/System32/netapi32.dll
USER ContainerAdministrator
ENTRYPOINT ["/csi.exe"]
"#;

    #[test]
    fn parses_stages() {
        let f = Containerfile::parse(GOOD, true);
        let summary: Vec<(Option<&str>, bool, usize)> = f
            .stages
            .iter()
            .map(|s| (s.name.as_deref(), s.windows, s.line))
            .collect();
        assert_eq!(
            summary,
            [
                (Some("core"), true, 5),
                (Some("builder"), false, 6),
                (None, true, 11)
            ]
        );
        assert_eq!(
            f.stages[0].resolved,
            "mcr.microsoft.com/windows/servercore:ltsc2022"
        );
        let run = &f.stages[1].body[1];
        assert_eq!((run.keyword.as_str(), run.line), ("RUN", 8));
        assert_eq!(run.args, "mkdir -p /out && echo hi > /out/csi.exe");
        assert_eq!(f.stages[2].body.len(), 4);
        assert!(
            lint(GOOD, true, &["BUILDER"]).is_empty(),
            "{:?}",
            lint(GOOD, true, &[])
        );
    }

    #[test]
    fn escape_directive() {
        let text = "# escape=`\nARG WINDOWS_BASE\nFROM ${WINDOWS_BASE}\nRUN cmd /c `\n    echo C:\\x\nUSER ContainerAdministrator\n";
        let f = Containerfile::parse(text, true);
        let body = &f.stages[0].body;
        assert_eq!(body[0].args, "cmd /c echo C:\\x");
        assert_eq!(body[1].keyword, "USER");
        let errors = lint(text, true, &[]);
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].line, Some(4));
    }

    #[test]
    fn heredocs_are_skipped() {
        let text = "FROM busybox AS b\nRUN <<EOF\nFROM nope\nEOF\nFROM ${WINDOWS_BASE}\n";
        let f = Containerfile::parse(text, true);
        assert_eq!(f.stages.len(), 2);
        assert_eq!(f.stages[1].line, 5);
    }

    /// What, Containerfile, is it the Windows one, plan build args, expected line, expected text.
    type LintCase = (
        &'static str,
        &'static str,
        bool,
        &'static [&'static str],
        Option<usize>,
        &'static str,
    );

    /// One case per rule, each giving exactly one error.
    fn lint_cases() -> [LintCase; 9] {
        [
            (
                "run in windows stage",
                "ARG WINDOWS_BASE\nFROM ${WINDOWS_BASE}\nRUN echo hi\n",
                true,
                &[],
                Some(3),
                "RUN in Windows stage #1 (FROM ${WINDOWS_BASE})",
            ),
            (
                "run in a stage built on a windows stage",
                "ARG WINDOWS_BASE\nFROM mcr.microsoft.com/windows/servercore:ltsc2022 AS core\nFROM core AS more\nRUN dir\nFROM ${WINDOWS_BASE}\n",
                true,
                &[],
                Some(4),
                "RUN in Windows stage 'more'",
            ),
            (
                "copy from windows stage without Files",
                "ARG WINDOWS_BASE\nFROM mcr.microsoft.com/windows/servercore:ltsc2022 AS core\nFROM ${WINDOWS_BASE}\nCOPY --from=core /Windows/System32/netapi32.dll /Windows/System32/\n",
                true,
                &[],
                Some(4),
                "write the source as /Files/Windows/System32/netapi32.dll",
            ),
            (
                "copy from a windows image without Files",
                "ARG WINDOWS_BASE\nFROM ${WINDOWS_BASE}\nCOPY --from=mcr.microsoft.com/windows/servercore:ltsc2022 Windows/x.dll /x.dll\n",
                true,
                &[],
                Some(3),
                "write the source as /Files/Windows/x.dll",
            ),
            (
                "copy from stage index",
                "ARG WINDOWS_BASE\nFROM ${WINDOWS_BASE}\nFROM ${WINDOWS_BASE}\nCOPY --from=0 /a /a\n",
                true,
                &[],
                Some(4),
                "'0' is a Windows stage",
            ),
            (
                "scratch",
                "FROM busybox AS b\nFROM scratch\nCOPY --from=b /x /x\n",
                true,
                &[],
                Some(2),
                "FROM scratch",
            ),
            (
                "hard-coded base",
                "FROM mcr.microsoft.com/windows/nanoserver:ltsc2022\n",
                true,
                &[],
                Some(1),
                "the plan's Windows base (and build) is ignored",
            ),
            (
                "undeclared build arg",
                "ARG BUILDER\nFROM ${BUILDER}\nRUN true\n",
                false,
                &["BUILDR"],
                None,
                "build arg BUILDR from the plan is not declared",
            ),
            ("empty", "# nothing\n", false, &[], None, "no FROM"),
        ]
    }

    #[test]
    fn lint_rules() {
        let cases = lint_cases();
        for (what, text, windows, args, line, want) in cases {
            let errors = lint(text, windows, args);
            assert_eq!(errors.len(), 1, "{what}: {errors:?}");
            assert_eq!(errors[0].line, line, "{what}");
            assert!(
                errors[0].message.contains(want),
                "{what}: {}",
                errors[0].message
            );
        }
        // Linux Containerfiles may RUN, and COPY from Linux stages needs no prefix.
        let linux = "ARG B=golang\nFROM ${B} AS b\nRUN go build\nFROM gcr.io/distroless/static\nCOPY --from=b /out/x /x\n";
        assert!(lint(linux, false, &["B"]).is_empty());
    }
}
