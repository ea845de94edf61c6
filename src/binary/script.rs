//! `#!` scripts, read as Linux's `binfmt_script` does: the first line, at most
//! `BINPRM_BUF_SIZE` (256) bytes, spaces and tabs before the interpreter skipped, the
//! interpreter up to the next space, tab or NUL, and the rest (trimmed) as one argument.

use super::info::BinaryFormat;

/// Linux's `BINPRM_BUF_SIZE`: the bytes of a file the kernel reads to find `#!`.
pub(super) const LINE_MAX: usize = 256;

/// The script format of `head` (which starts with `#!`).
pub(super) fn parse(head: &[u8]) -> BinaryFormat {
    let buf = &head[..head.len().min(LINE_MAX)];
    let line = match buf.iter().position(|&c| c == b'\n') {
        Some(end) => &buf[2..end],
        None => &buf[2..],
    };
    let is_blank = |c: &u8| *c == b' ' || *c == b'\t';
    let start = line.iter().position(|c| !is_blank(c)).unwrap_or(line.len());
    let line = &line[start..];
    let end = line
        .iter()
        .position(|c| is_blank(c) || *c == 0)
        .unwrap_or(line.len());
    let interpreter = &line[..end];
    if interpreter.is_empty() {
        return BinaryFormat::Other {
            reason: "#! line names no interpreter".to_string(),
        };
    }
    if end == line.len() && !buf.contains(&b'\n') && head.len() > LINE_MAX {
        return BinaryFormat::Other {
            reason: format!("#! interpreter name runs past the kernel's {LINE_MAX}-byte buffer"),
        };
    }
    let rest = &line[end..];
    let rest = &rest[..rest.iter().position(|&c| c == 0).unwrap_or(rest.len())];
    let args = String::from_utf8_lossy(rest)
        .trim_matches(|c| c == ' ' || c == '\t')
        .to_string();
    BinaryFormat::Script {
        interpreter: String::from_utf8_lossy(interpreter).into_owned(),
        args: (!args.is_empty()).then_some(args),
    }
}
