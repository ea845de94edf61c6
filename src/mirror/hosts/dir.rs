//! containerd's own `config_path` tree (`--hosts-dir DIR`) as a Windows node reads it
//! (containerd 1.7 `remotes/docker/config/hosts.go` `HostDirFromRoot`, `hostDirectory`,
//! `loadHostDir`; `config_windows.go` `hostPaths`): for a registry host the **first folder
//! that exists** of `DIR/<host>_<port>_`, `DIR/<host><port>` (the `:` taken out: Windows
//! allows none in a name) and `DIR/_default` — for a host without a port `DIR/<host>`, then
//! `DIR/_default` ([`host_paths`](super::model::host_paths)). A folder without a `hosts.toml` (certificates only), or
//! with an empty one, means no mirrors: the registry itself, never `_default`. A folder (or
//! its `hosts.toml`) containerd cannot read — not a directory, a symbolic link loop, a
//! `hosts.toml` that is a directory, a FIFO or a device — fails every pull from that host on
//! the node: refused here, naming the file. A folder named `host:port` is never looked up on
//! Windows and is not read.
//!
//! Each file is parsed as `parseHostsFile` and `parseHostConfig` do: `[host."URL"]` tables in
//! file order, then the top-level `server`; a URL without a scheme gets `https://`; of the URL
//! containerd keeps the scheme, host and path (`url.Parse`: a `user:password@` and a query or
//! fragment are dropped, and never printed here); its path gets `/v2` appended unless it
//! already ends with `/v2` or `override_path = true`; capabilities `pull`, `resolve`, `push`
//! (none listed: all three). A file containerd would refuse (unknown capability, a scheme
//! other than http/https, a URL without a host, mistyped fields, `ca`, `client` or `header`
//! of a type its type switches refuse) is refused here naming the file, the entry and the
//! field: containerd logs the error and ignores the file, so the node pulls from the source.
//! Whether the file has a `host` table is kept: containerd 1.5 – 1.7.31 ignore a file without
//! one, `server` included ([`HostsReader`](super::containerd::HostsReader)).

use std::path::Path;
use std::sync::Arc;

use toml::de::{DeTable, DeValue};

use super::containerd::join_path;
use super::model::{Capabilities, ConfiguredBy, HostsConfig, HostsFile, RegistryHost};
use crate::mirror::config::{ConfigProblem, MirrorConfigError};
use crate::secret::redact_location;

/// Largest hosts.toml read.
const MAX_HOSTS_FILE_BYTES: u64 = 1024 * 1024;
/// Most folders read from the directory.
const MAX_FOLDERS: usize = 10_000;

fn refuse(path: &Path, line: Option<usize>, message: String) -> MirrorConfigError {
    MirrorConfigError {
        path: path.to_path_buf(),
        line,
        problem: Box::new(ConfigProblem::Invalid(message)),
    }
}

fn unreadable(path: &Path, e: std::io::Error) -> MirrorConfigError {
    MirrorConfigError {
        path: path.to_path_buf(),
        line: None,
        problem: Box::new(ConfigProblem::Read(Arc::new(e))),
    }
}

/// Reads every folder of `dir` a Windows node may look up, with its `hosts.toml`.
pub fn read(dir: &Path) -> Result<HostsConfig, MirrorConfigError> {
    let entries = std::fs::read_dir(dir).map_err(|e| unreadable(dir, e))?;
    let mut config = HostsConfig::new(ConfiguredBy::Directory);
    for (n, entry) in entries.enumerate() {
        if n >= MAX_FOLDERS {
            return Err(refuse(
                dir,
                None,
                format!("more than {MAX_FOLDERS} entries"),
            ));
        }
        let entry = entry.map_err(|e| unreadable(dir, e))?;
        // A name that is not UTF-8 names no registry host; one with `:` is never looked up.
        let Some(name) = entry.file_name().to_str().map(str::to_string) else {
            continue;
        };
        if name.contains(':') {
            continue;
        }
        if let Some(file) = folder(&entry.path(), &name)? {
            config.files.insert(name, file);
        }
    }
    Ok(config)
}

/// The hosts.toml of the folder `path` (named `name`) as containerd loads it; `None` when it
/// does not exist (a dangling link: `os.Stat` says so, and the next folder is looked up).
fn folder(path: &Path, name: &str) -> Result<Option<HostsFile>, MirrorConfigError> {
    let fails = |what: String| {
        format!(
            "{what}: containerd cannot read it and fails every pull from the registry host \
             whose folder it is ('{name}'; hosts.go HostDirFromRoot, loadHostDir)"
        )
    };
    match std::fs::metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(refuse(path, None, fails(format!("cannot be read ({e})")))),
        Ok(m) if !m.is_dir() => {
            return Err(refuse(
                path,
                None,
                fails(format!("{}, not a directory", crate::input::file_kind(&m))),
            ));
        }
        Ok(_) => {}
    }
    let file = path.join("hosts.toml");
    let none = || HostsFile {
        origin: format!("{} (no hosts.toml: no mirrors)", path.display()),
        hosts: Vec::new(),
        server: None,
        host_table: false,
    };
    match std::fs::metadata(&file) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Some(none())),
        Err(e) => return Err(refuse(&file, None, fails(format!("cannot be read ({e})")))),
        Ok(m) if !m.is_file() => {
            return Err(refuse(
                &file,
                None,
                fails(format!("{}, not a file", crate::input::file_kind(&m))),
            ));
        }
        Ok(_) => {}
    }
    let text =
        crate::input::read_file(&file, MAX_HOSTS_FILE_BYTES).map_err(|e| match e.source {
            Some(io) => unreadable(&file, io),
            None => refuse(
                &file,
                None,
                format!("larger than {MAX_HOSTS_FILE_BYTES} bytes"),
            ),
        })?;
    match text.is_empty() {
        true => Ok(Some(none())),
        false => parse(&file, &text).map(Some),
    }
}

/// The line of byte offset `at` in `text` (1-based).
fn line_of(text: &str, at: usize) -> usize {
    text.as_bytes()[..at.min(text.len())]
        .iter()
        .filter(|b| **b == b'\n')
        .count()
        + 1
}

/// One hosts.toml read from `path`.
pub fn parse(path: &Path, text: &str) -> Result<HostsFile, MirrorConfigError> {
    crate::yaml::check_nesting(text).map_err(|e| refuse(path, Some(e.line), e.to_string()))?;
    let root = DeTable::parse(text).map_err(|e| {
        let line = e.span().map(|s| line_of(text, s.start));
        refuse(path, line, format!("not valid TOML: {}", e.message()))
    })?;
    let root = root.get_ref();
    let mut hosts = Vec::new();
    if let Some(table) = root.get("host") {
        let line = line_of(text, table.span().start);
        let DeValue::Table(table) = table.get_ref() else {
            return Err(refuse(
                path,
                Some(line),
                "'host' is not a table of [host.\"URL\"] entries".into(),
            ));
        };
        let mut ordered: Vec<_> = table.iter().collect();
        ordered.sort_by_key(|(k, _)| k.span().start);
        for (key, value) in ordered {
            let at = format!("[host.\"{}\"]", redact_location(key.get_ref()));
            let line = Some(line_of(text, key.span().start));
            let DeValue::Table(entry) = value.get_ref() else {
                return Err(refuse(path, line, format!("{at}: not a table")));
            };
            hosts.push(host_config(path, line, &at, key.get_ref(), entry)?);
        }
    }
    // The top level is parsed as an entry whether or not `server` is set (parseHostsFile).
    let line = root.get("server").map(|v| line_of(text, v.span().start));
    let server = match root.get("server").map(|v| v.get_ref()) {
        None => None,
        Some(DeValue::String(url)) if url.is_empty() => None,
        Some(DeValue::String(url)) => Some(host_config(path, line, "server", url, root)?),
        Some(_) => return Err(refuse(path, line, "server: not a string".into())),
    };
    if server.is_none() {
        fields(root).map_err(|m| refuse(path, None, format!("top level: {m}")))?;
    }
    Ok(HostsFile {
        origin: path.display().to_string(),
        hosts,
        server,
        host_table: root.get("host").is_some(),
    })
}

/// One host (or the server) as `parseHostConfig` builds it from `url` (printed only through
/// [`redact_location`]).
fn host_config(
    path: &Path,
    line: Option<usize>,
    at: &str,
    url: &str,
    entry: &DeTable,
) -> Result<RegistryHost, MirrorConfigError> {
    let bad = |m: String| refuse(path, line, format!("{at}: {m}"));
    let shown = redact_location(url);
    let (override_path, capabilities) = fields(entry).map_err(bad)?;
    if !url.starts_with("http")
        && let Some((scheme, _)) = url.split_once("://")
    {
        return Err(bad(format!(
            "URL '{shown}': scheme '{scheme}' is neither https nor http"
        )));
    }
    let full = match url.starts_with("http") {
        true => url.to_string(),
        false => format!("https://{url}"),
    };
    let (scheme, rest) = full
        .split_once("://")
        .ok_or_else(|| bad(format!("URL '{shown}' does not parse (no '://')")))?;
    if scheme != "https" && scheme != "http" {
        return Err(bad(format!(
            "URL '{shown}': scheme '{scheme}' is neither https nor http"
        )));
    }
    // url.Parse: the fragment is cut first, then the query; the authority ends at the first
    // '/', its user information at the last '@'. containerd keeps scheme, host and path.
    let rest = rest.split('#').next().unwrap_or_default();
    let rest = rest.split('?').next().unwrap_or_default();
    let (authority, url_path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    let host = authority.rsplit('@').next().unwrap_or_default();
    let bad_port = host
        .rsplit_once(':')
        .is_some_and(|(_, port)| port.is_empty() || !port.bytes().all(|b| b.is_ascii_digit()));
    if host.is_empty() || host.contains(|c: char| c == ' ' || c.is_control()) || bad_port {
        return Err(bad(format!("URL '{shown}' has no usable host")));
    }
    let mut p = match url_path {
        "" => String::new(),
        p => join_path(&[p]),
    };
    if !override_path && !p.ends_with("/v2") {
        p = if p == "/" { String::new() } else { p };
        p.push_str("/v2");
    }
    Ok(RegistryHost {
        scheme: scheme.into(),
        host: host.into(),
        path: p,
        capabilities,
        override_path,
    })
}

/// The fields of an entry (a `[host."URL"]` table, or the top level) as `parseHostsFile`
/// decodes them and `parseHostConfig` checks them: `override_path` and `skip_verify` booleans,
/// the capabilities; `ca`, `client` and `header` of the types its type switches take. Returns
/// `override_path` and the capabilities, or what is wrong.
fn fields(entry: &DeTable) -> Result<(bool, Capabilities), String> {
    let flag = |field: &str| match entry.get(field).map(|v| v.get_ref()) {
        None => Ok(false),
        Some(DeValue::Boolean(b)) => Ok(*b),
        Some(_) => Err(format!("{field}: not a boolean")),
    };
    let override_path = flag("override_path")?;
    flag("skip_verify")?;
    let capabilities = capabilities(entry)?;
    tls_and_header(entry)?;
    Ok((override_path, capabilities))
}

/// `ca`: a path or a list of paths; `client`: a path, or a list of paths and pairs
/// `[cert, key]`; `header`: a table of strings or lists of strings (hosts.go
/// `parseHostConfig`, its type switches and `makeStringSlice`; a `header` that is not a table
/// fails `tree.Unmarshal`).
fn tls_and_header(entry: &DeTable) -> Result<(), String> {
    let strings = |items: &toml::de::DeArray| {
        items
            .iter()
            .position(|v| !matches!(v.get_ref(), DeValue::String(_)))
    };
    let refused = "containerd refuses the file and pulls from the source";
    match entry.get("ca").map(|v| v.get_ref()) {
        None | Some(DeValue::String(_)) => {}
        Some(DeValue::Array(items)) => {
            if let Some(i) = strings(items) {
                return Err(format!("ca[{i}]: not a string ({refused})"));
            }
        }
        Some(_) => return Err(format!("ca: not a path or a list of paths ({refused})")),
    }
    match entry.get("client").map(|v| v.get_ref()) {
        None | Some(DeValue::String(_)) => {}
        Some(DeValue::Array(items)) => {
            for (i, item) in items.iter().enumerate() {
                match item.get_ref() {
                    DeValue::String(_) => {}
                    DeValue::Array(pair) if pair.len() == 2 && strings(pair).is_none() => {}
                    DeValue::Array(_) => {
                        return Err(format!(
                            "client[{i}]: not a pair of paths [cert, key] ({refused})"
                        ));
                    }
                    _ => return Err(format!("client[{i}]: not a path or a pair ({refused})")),
                }
            }
        }
        Some(_) => {
            return Err(format!(
                "client: not a path or a list of paths and pairs ({refused})"
            ));
        }
    }
    match entry.get("header").map(|v| v.get_ref()) {
        None => {}
        Some(DeValue::Table(headers)) => {
            for (key, value) in headers.iter() {
                let ok = match value.get_ref() {
                    DeValue::String(_) => true,
                    DeValue::Array(items) => strings(items).is_none(),
                    _ => false,
                };
                if !ok {
                    return Err(format!(
                        "header '{}': not a string or a list of strings ({refused})",
                        key.get_ref()
                    ));
                }
            }
        }
        Some(_) => return Err(format!("header: not a table ({refused})")),
    }
    Ok(())
}

/// The `capabilities` of an entry (none listed: all of them), or what is wrong with them.
fn capabilities(entry: &DeTable) -> Result<Capabilities, String> {
    let Some(v) = entry.get("capabilities") else {
        return Ok(Capabilities::ALL);
    };
    let DeValue::Array(items) = v.get_ref() else {
        return Err("capabilities: not a list".into());
    };
    if items.is_empty() {
        return Ok(Capabilities::ALL);
    }
    let mut caps = Capabilities {
        pull: false,
        resolve: false,
        push: false,
    };
    for item in items {
        let DeValue::String(name) = item.get_ref() else {
            return Err("capabilities: an item is not a string".into());
        };
        match name.to_lowercase().as_str() {
            "pull" => caps.pull = true,
            "resolve" => caps.resolve = true,
            "push" => caps.push = true,
            other => {
                return Err(format!(
                    "capabilities: unknown capability '{other}' (containerd knows pull, resolve, push, \
                     refuses the file and pulls from the source)"
                ));
            }
        }
    }
    Ok(caps)
}
