//! containerd's own `config_path` tree (`--hosts-dir DIR`): `DIR/<host>/hosts.toml` per source
//! registry host, `DIR/<host>_<port>_/hosts.toml` (looked up before `DIR/<host>:<port>`) for a
//! host with a port, and `DIR/_default/hosts.toml` (containerd
//! `remotes/docker/config/hosts.go`, `hostPaths`, `hostDirectory`). Each file is parsed as
//! `parseHostsFile` and `parseHostConfig` do: `[host."URL"]` tables in file order, then the
//! top-level `server`; a URL without a scheme gets `https://`; its path gets `/v2` appended
//! unless it already ends with `/v2` or `override_path = true`; capabilities `pull`, `resolve`,
//! `push` (none listed: all three). A file containerd would refuse (unknown capability, a
//! scheme other than http/https, a URL without a host, mistyped fields) is refused here
//! naming the file, the entry and the field: containerd logs the error and ignores the file,
//! so the node pulls from the source.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use toml::de::{DeTable, DeValue};

use super::containerd::join_path;
use super::model::{Capabilities, ConfiguredBy, HostsConfig, HostsFile, RegistryHost};
use crate::mirror::config::{ConfigError, ConfigProblem};

/// Largest hosts.toml read.
const MAX_HOSTS_FILE_BYTES: u64 = 1024 * 1024;
/// Most folders read from the directory.
const MAX_FOLDERS: usize = 10_000;

fn refuse(path: &Path, line: Option<usize>, message: String) -> ConfigError {
    ConfigError {
        path: path.to_path_buf(),
        line,
        problem: Box::new(ConfigProblem::Invalid(message)),
    }
}

fn unreadable(path: &Path, e: std::io::Error) -> ConfigError {
    ConfigError {
        path: path.to_path_buf(),
        line: None,
        problem: Box::new(ConfigProblem::Read(Arc::new(e))),
    }
}

/// The registry host a folder stands for: `host_port_` is `host:port` (containerd
/// `hostDirectory`), `_default` is `None`.
pub fn folder_host(folder: &str) -> Option<String> {
    if folder == "_default" {
        return None;
    }
    if let Some(inner) = folder.strip_suffix('_')
        && let Some((host, port)) = inner.rsplit_once('_')
        && !host.is_empty()
        && !port.is_empty()
        && port.bytes().all(|b| b.is_ascii_digit())
    {
        return Some(format!("{host}:{port}"));
    }
    Some(folder.to_string())
}

/// Reads every `DIR/<folder>/hosts.toml`. Where both `host_port_` and `host:port` exist, the
/// first wins, as containerd looks it up first.
pub fn read(dir: &Path) -> Result<HostsConfig, ConfigError> {
    let entries = std::fs::read_dir(dir).map_err(|e| unreadable(dir, e))?;
    let mut folders: Vec<(String, PathBuf)> = Vec::new();
    for (n, entry) in entries.enumerate() {
        if n >= MAX_FOLDERS {
            return Err(refuse(
                dir,
                None,
                format!("more than {MAX_FOLDERS} entries"),
            ));
        }
        let entry = entry.map_err(|e| unreadable(dir, e))?;
        let file = entry.path().join("hosts.toml");
        if let Some(name) = entry.file_name().to_str()
            && file.is_file()
        {
            folders.push((name.to_string(), file));
        }
    }
    // `host_port_` sorts after `host:port` (`_` > `:`); read in name order, the former wins.
    folders.sort();
    let mut config = HostsConfig::new(ConfiguredBy::Directory);
    let mut named: BTreeMap<String, bool> = BTreeMap::new();
    for (folder, file) in folders {
        let text =
            crate::input::read_file(&file, MAX_HOSTS_FILE_BYTES).map_err(|e| match e.source {
                Some(io) => unreadable(&file, io),
                None => refuse(
                    &file,
                    None,
                    format!("larger than {MAX_HOSTS_FILE_BYTES} bytes"),
                ),
            })?;
        let parsed = parse(&file, &text)?;
        match folder_host(&folder) {
            None => config.default = Some(parsed),
            Some(host) => {
                let port_folder = folder != host;
                if named.get(&host) == Some(&true) && !port_folder {
                    continue;
                }
                named.insert(host.clone(), port_folder);
                config.files.insert(host, parsed);
            }
        }
    }
    Ok(config)
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
pub fn parse(path: &Path, text: &str) -> Result<HostsFile, ConfigError> {
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
            let at = format!("[host.\"{}\"]", key.get_ref());
            let line = Some(line_of(text, key.span().start));
            let DeValue::Table(entry) = value.get_ref() else {
                return Err(refuse(path, line, format!("{at}: not a table")));
            };
            hosts.push(host_config(path, line, &at, key.get_ref(), entry)?);
        }
    }
    let server = match root.get("server") {
        None => None,
        Some(v) => {
            let line = Some(line_of(text, v.span().start));
            let DeValue::String(url) = v.get_ref() else {
                return Err(refuse(path, line, "server: not a string".into()));
            };
            Some(host_config(path, line, "server", url, root)?)
        }
    };
    Ok(HostsFile {
        origin: path.display().to_string(),
        hosts,
        server,
    })
}

/// A boolean field of `entry` (absent: `false`).
fn flag(
    path: &Path,
    line: Option<usize>,
    at: &str,
    entry: &DeTable,
    field: &str,
) -> Result<bool, ConfigError> {
    match entry.get(field).map(|v| v.get_ref()) {
        None => Ok(false),
        Some(DeValue::Boolean(b)) => Ok(*b),
        Some(_) => Err(refuse(path, line, format!("{at}: {field}: not a boolean"))),
    }
}

/// One host (or the server) as `parseHostConfig` builds it.
fn host_config(
    path: &Path,
    line: Option<usize>,
    at: &str,
    url: &str,
    entry: &DeTable,
) -> Result<RegistryHost, ConfigError> {
    let bad = |m: String| refuse(path, line, format!("{at}: {m}"));
    let override_path = flag(path, line, at, entry, "override_path")?;
    flag(path, line, at, entry, "skip_verify")?;
    if !url.starts_with("http")
        && let Some((scheme, _)) = url.split_once("://")
    {
        return Err(bad(format!(
            "URL '{url}': scheme '{scheme}' is neither https nor http"
        )));
    }
    let full = match url.starts_with("http") {
        true => url.to_string(),
        false => format!("https://{url}"),
    };
    let (scheme, rest) = full
        .split_once("://")
        .ok_or_else(|| bad(format!("URL '{url}' does not parse (no '://')")))?;
    if scheme != "https" && scheme != "http" {
        return Err(bad(format!(
            "URL '{url}': scheme '{scheme}' is neither https nor http"
        )));
    }
    let (host, url_path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    let bad_port = host
        .rsplit_once(':')
        .is_some_and(|(_, port)| port.is_empty() || !port.bytes().all(|b| b.is_ascii_digit()));
    if host.is_empty() || host.contains(['?', '#', ' ', '@']) || bad_port {
        return Err(bad(format!("URL '{url}' has no usable host")));
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
        capabilities: capabilities(entry).map_err(bad)?,
        override_path,
    })
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
