//! Go build information: the blob Go's linker leaves near the start of the data segment
//! (`debug/buildinfo/buildinfo.go`, `readRawBuildInfo`) and the module text inside it
//! (`runtime/debug/mod.go`, `ParseBuildInfo`).

use super::info::{GoBuildInfo, GoModule};
use super::read::uleb128;

/// The most `dep` lines kept (a Kubernetes CSI driver has a few hundred; the 64 KiB window
/// holds about a thousand): past it the rest is named in `problems`, never guessed.
pub const MAX_DEPS: usize = 1024;

/// `buildInfoMagic`: 14 bytes that open the blob.
const MAGIC: &[u8] = b"\xff Go buildinf:";
/// The blob starts on a 16-byte boundary of the data window (`buildInfoAlign`).
const ALIGN: usize = 16;
/// The blob's fixed header (`buildInfoSize`): magic, pointer size, flags, two pointers.
const HEADER: usize = 32;
/// Flag bit 2: the version and module strings follow the header inline as varint-prefixed
/// strings (Go 1.18 on); without it the header holds pointers (older Go).
const FLAG_INLINE: u8 = 2;

/// Looks for the blob at each 16-byte boundary of `window` (the first 64 KiB of the data
/// start, as Go reads them). `None` when there is none: not a Go program. An older
/// pointer-format blob, or one whose strings overrun the window, is named in `problems`.
pub(super) fn find(window: &[u8], problems: &mut Vec<String>) -> Option<GoBuildInfo> {
    let at = (0..window.len())
        .step_by(ALIGN)
        .find(|&i| window[i..].starts_with(MAGIC) && window.len() - i >= HEADER)?;
    let blob = &window[at..];
    if blob[15] & FLAG_INLINE == 0 {
        problems
            .push("Go build information in the pre-1.18 pointer format was not read".to_string());
        return None;
    }
    let Some((version, rest)) = string(&blob[HEADER..]) else {
        problems.push("Go build information: the version string overruns the window".to_string());
        return None;
    };
    let modinfo = match string(rest) {
        Some((m, _)) => strip_sentinels(m),
        None => {
            problems
                .push("Go build information: the module string overruns the window".to_string());
            b""
        }
    };
    if version.is_empty() {
        return None;
    }
    let mut info = GoBuildInfo {
        go_version: String::from_utf8_lossy(version).into_owned(),
        ..GoBuildInfo::default()
    };
    parse_modinfo(&String::from_utf8_lossy(modinfo), &mut info, problems);
    Some(info)
}

/// `decodeString`: a uvarint length and that many bytes, which must fit in `b`.
fn string(b: &[u8]) -> Option<(&[u8], &[u8])> {
    let (len, n) = uleb128(b)?;
    let len = usize::try_from(len).ok()?;
    if len >= b.len() - n {
        return None;
    }
    Some((&b[n..n + len], &b[n + len..]))
}

/// The module text is framed by two 16-byte sentinels (cmd/go's `infoStart`/`infoEnd`); Go
/// strips them when the text is at least 33 bytes with a newline 17 from the end, and
/// otherwise treats the text as empty.
fn strip_sentinels(m: &[u8]) -> &[u8] {
    if m.len() >= 33 && m[m.len() - 17] == b'\n' {
        &m[16..m.len() - 16]
    } else {
        b""
    }
}

/// The lines of `ParseBuildInfo` this check needs: `path`, `mod`, `dep` and the `=>` line
/// that replaces the module on the line before, and the `build` settings GOOS, GOARCH, GOARM,
/// vcs.revision, vcs.modified. Like Go, a last line without a newline is not read. Quoted
/// values (Go quotes those with spaces, quotes or `=`) are not unquoted: a quoted value of one
/// of these keys is named in `problems`, as is a malformed `dep` or `=>` line (Go's parser
/// refuses the whole text there; this one keeps what came before).
pub(super) fn parse_modinfo(text: &str, info: &mut GoBuildInfo, problems: &mut Vec<String>) {
    let mut lines: Vec<&str> = text.split('\n').collect();
    lines.pop();
    // The module on the previous line, which a `=>` line replaces: the main module (whose
    // replacement this check does not need) or the last dep kept.
    let mut last: Option<Last> = None;
    let mut dropped = 0usize;
    for line in lines {
        let before = last.take();
        if let Some(path) = line.strip_prefix("path\t") {
            info.path = path.to_string();
        } else if let Some(main) = line.strip_prefix("mod\t") {
            let mut cols = main.split('\t');
            info.main_module = cols.next().map(str::to_string);
            info.main_version = cols.next().map(str::to_string);
            last = Some(Last::Main);
        } else if let Some(dep) = line.strip_prefix("dep\t") {
            match module_columns(dep) {
                Some(_) if info.deps.len() >= MAX_DEPS => dropped += 1,
                Some(module) => {
                    info.deps.push(module);
                    last = Some(Last::Dep);
                }
                None => problems.push(malformed("a dep line")),
            }
        } else if let Some(rep) = line.strip_prefix("=>\t") {
            match (module_columns(rep), before) {
                (None, _) => problems.push(malformed("a => line")),
                (Some(with), Some(Last::Dep)) => {
                    if let Some(dep) = info.deps.last_mut() {
                        dep.replace = Some(Box::new(with));
                    }
                }
                (Some(_), Some(Last::Main)) => {}
                (Some(_), None) if dropped > 0 => {}
                (Some(with), None) => problems.push(format!(
                    "Go build information: a replacement ({}) with no module on the line before",
                    with.path
                )),
            }
        } else if let Some(kv) = line.strip_prefix("build\t") {
            build_line(kv, info, problems);
        }
    }
    if dropped > 0 {
        problems.push(format!(
            "Go build information: {dropped} module dependencies past the first {MAX_DEPS} not read"
        ));
    }
}

/// What a `=>` line would replace.
#[derive(Debug, Clone, Copy)]
enum Last {
    Main,
    Dep,
}

fn malformed(what: &str) -> String {
    format!("Go build information: {what} without 2 or 3 tab-separated columns, not read")
}

/// The columns of a module line (`readModuleLine`): path and version, then a checksum that
/// a replaced module does not have; `None` for another count or an empty path.
fn module_columns(cols: &str) -> Option<GoModule> {
    let elem: Vec<&str> = cols.split('\t').collect();
    if !(2..=3).contains(&elem.len()) || elem[0].is_empty() {
        return None;
    }
    Some(GoModule {
        path: elem[0].to_string(),
        version: elem[1].to_string(),
        replace: None,
    })
}

/// A `build` setting this check reads.
fn build_line(kv: &str, info: &mut GoBuildInfo, problems: &mut Vec<String>) {
    let Some((key, value)) = kv.split_once('=') else {
        return;
    };
    let slot = match key {
        "GOOS" => &mut info.goos,
        "GOARCH" => &mut info.goarch,
        "GOARM" => &mut info.goarm,
        "vcs.revision" => &mut info.revision,
        "vcs.modified" => {
            info.modified = match value {
                "true" => Some(true),
                "false" => Some(false),
                _ => None,
            };
            return;
        }
        _ => return,
    };
    if value.starts_with('"') || value.starts_with('`') {
        problems.push(format!(
            "Go build setting {key} has a quoted value, not read"
        ));
        return;
    }
    *slot = Some(value.to_string());
}

#[cfg(test)]
mod tests;
