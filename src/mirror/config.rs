//! Mirror configuration as a cluster node reads it (DOMAIN.md §5).
//!
//! Three inputs end up in one [`MirrorConfig`], the shape of containers-registries.conf(5)
//! v2 after the Machine Config Operator has rendered the cluster objects into it:
//!
//! - `ImageDigestMirrorSet` / `ImageTagMirrorSet` (`config.openshift.io/v1`) and
//!   `ImageContentSourcePolicy` (`operator.openshift.io/v1alpha1`), several YAML documents per
//!   file (and `kind: List`), as `oc-mirror` writes them. Each `source` becomes a registry
//!   entry whose prefix is the source; IDMS and ICSP mirrors serve digest pulls only, ITMS
//!   mirrors tag pulls only; `mirrorSourcePolicy: NeverContactSource` blocks the source.
//!   Entries for the same source are merged, mirrors in document order.
//! - `registries.conf` v2 (TOML) with its `<file>.d/*.conf` drop-ins, read in name order; a
//!   drop-in entry replaces an earlier entry with the same prefix, and within one file the
//!   first entry of a prefix wins (containers/image `sysregistriesv2`).
//!
//! Registries files are applied first, then the mirror sets, whatever the order of the flags.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::reference::valid_path_component;

/// Which pulls a mirror serves (registries.conf `pull-from-mirror`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum PullFrom {
    /// Digest and tag pulls.
    All,
    /// Digest pulls only (IDMS, ICSP, `mirror-by-digest-only`).
    DigestOnly,
    /// Tag pulls only (ITMS).
    TagOnly,
}

impl PullFrom {
    /// Does a mirror with this setting serve a pull by digest (`true`) or by tag (`false`)?
    pub fn serves(self, by_digest: bool) -> bool {
        match self {
            PullFrom::All => true,
            PullFrom::DigestOnly => by_digest,
            PullFrom::TagOnly => !by_digest,
        }
    }

    /// The registries.conf spelling.
    pub fn name(self) -> &'static str {
        match self {
            PullFrom::All => "all",
            PullFrom::DigestOnly => "digest-only",
            PullFrom::TagOnly => "tag-only",
        }
    }
}

/// One mirror of a registry entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mirror {
    /// `host[:port][/path]`, no trailing slash.
    pub location: String,
    /// Which pulls it serves.
    pub pull_from: PullFrom,
    /// Where it was configured (file and object).
    pub origin: String,
}

/// A registry entry: references under `prefix` are pulled from the mirrors, in order, then
/// from `location` unless `blocked`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Registry {
    /// `host[:port][/path]` or `*.domain`.
    pub prefix: String,
    /// The source location the prefix maps to (empty for a wildcard prefix: the reference
    /// itself).
    pub location: String,
    /// The source may not be contacted (`blocked`, `NeverContactSource`).
    pub blocked: bool,
    /// Mirrors, in the order a node tries them.
    pub mirrors: Vec<Mirror>,
    /// Where the entry was configured.
    pub origin: String,
}

/// Every registry entry of the inputs, one per prefix, sorted by prefix.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MirrorConfig {
    registries: BTreeMap<String, Registry>,
}

/// A mirror configuration file that cannot be used, naming the file (and line when known).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ConfigError {
    /// The file.
    pub path: PathBuf,
    /// The line, when known.
    pub line: Option<usize>,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.path.display())?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        write!(f, ": {}", self.message)
    }
}

fn error(path: &Path, line: Option<usize>, message: impl Into<String>) -> ConfigError {
    ConfigError {
        path: path.to_path_buf(),
        line,
        message: message.into(),
    }
}

/// Largest configuration file read.
const MAX_CONFIG_FILE_BYTES: u64 = 16 * 1024 * 1024;
/// Most entries read from one `.d` drop-in directory.
const MAX_DROP_INS: usize = 1000;

fn read(path: &Path) -> Result<String, ConfigError> {
    let meta = std::fs::metadata(path).map_err(|e| error(path, None, e.to_string()))?;
    if meta.len() > MAX_CONFIG_FILE_BYTES {
        return Err(error(
            path,
            None,
            format!("larger than {MAX_CONFIG_FILE_BYTES} bytes"),
        ));
    }
    std::fs::read_to_string(path).map_err(|e| error(path, None, e.to_string()))
}

impl MirrorConfig {
    /// True when no registry entry was configured.
    pub fn is_empty(&self) -> bool {
        self.registries.is_empty()
    }

    /// Every registry entry, sorted by prefix.
    pub fn registries(&self) -> impl Iterator<Item = &Registry> {
        self.registries.values()
    }

    /// Loads mirror-set YAML (IDMS, ITMS, ICSP; several documents) and merges it in.
    pub fn add_mirror_sets_file(&mut self, path: &Path) -> Result<(), ConfigError> {
        let text = read(path)?;
        self.add_mirror_sets(path, &text)
    }

    /// Merges mirror-set YAML text read from `path`.
    pub fn add_mirror_sets(&mut self, path: &Path, text: &str) -> Result<(), ConfigError> {
        let mut entries = Vec::new();
        for (i, doc) in serde_yaml_ng::Deserializer::from_str(text).enumerate() {
            let value = serde_yaml_ng::Value::deserialize(doc).map_err(|e| {
                let line = e.location().map(|l| l.line());
                error(path, line, format!("document {}: {e}", i + 1))
            })?;
            let at = format!("document {}", i + 1);
            collect_document(path, &at, value, 0, &mut entries)?;
        }
        if entries.is_empty() {
            return Err(error(
                path,
                None,
                "no ImageDigestMirrorSet, ImageTagMirrorSet or ImageContentSourcePolicy found",
            ));
        }
        for e in entries {
            self.merge_set_entry(e);
        }
        Ok(())
    }

    fn merge_set_entry(&mut self, e: SetEntry) {
        let reg = self
            .registries
            .entry(e.source.clone())
            .or_insert_with(|| Registry {
                prefix: e.source.clone(),
                location: if e.source.starts_with("*.") {
                    String::new()
                } else {
                    e.source.clone()
                },
                blocked: false,
                mirrors: Vec::new(),
                origin: e.origin.clone(),
            });
        reg.blocked |= e.never_contact_source;
        for location in e.mirrors {
            if !reg
                .mirrors
                .iter()
                .any(|m| m.location == location && m.pull_from == e.pull_from)
            {
                reg.mirrors.push(Mirror {
                    location,
                    pull_from: e.pull_from,
                    origin: e.origin.clone(),
                });
            }
        }
    }

    /// Loads a registries.conf v2 file and its `<file>.d/*.conf` drop-ins (name order).
    pub fn add_registries_conf_file(&mut self, path: &Path) -> Result<(), ConfigError> {
        let text = read(path)?;
        self.add_registries_conf(path, &text)?;
        let mut dir = path.as_os_str().to_owned();
        dir.push(".d");
        let dir = PathBuf::from(dir);
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(error(&dir, None, e.to_string())),
        };
        let mut drop_ins: Vec<PathBuf> = Vec::new();
        for (n, entry) in entries.enumerate() {
            if n >= MAX_DROP_INS {
                return Err(error(
                    &dir,
                    None,
                    format!("more than {MAX_DROP_INS} entries"),
                ));
            }
            let entry = entry.map_err(|e| error(&dir, None, e.to_string()))?;
            let p = entry.path();
            if p.extension().is_some_and(|x| x == "conf") && p.is_file() {
                drop_ins.push(p);
            }
        }
        drop_ins.sort();
        for p in drop_ins {
            let text = read(&p)?;
            self.add_registries_conf(&p, &text)?;
        }
        Ok(())
    }

    /// Merges registries.conf v2 text read from `path`: its entries replace earlier entries
    /// with the same prefix (as a drop-in does).
    pub fn add_registries_conf(&mut self, path: &Path, text: &str) -> Result<(), ConfigError> {
        let conf: RegistriesConf = toml::from_str(text).map_err(|e| {
            let line = e.span().map(|s| {
                text.as_bytes()[..s.start.min(text.len())]
                    .iter()
                    .filter(|b| **b == b'\n')
                    .count()
                    + 1
            });
            error(path, line, e.message().to_string())
        })?;
        if conf.registries.is_some() {
            return Err(error(
                path,
                None,
                "registries.conf v1 format ([registries.search] …) is not supported; use v2 [[registry]] tables",
            ));
        }
        let mut seen: BTreeMap<String, Registry> = BTreeMap::new();
        for (i, r) in conf.registry.into_iter().enumerate() {
            let at = format!("[[registry]] #{}", i + 1);
            let reg = r
                .into_registry(path, &at)
                .map_err(|m| error(path, None, format!("{at}: {m}")))?;
            // Within one file the first entry of a prefix wins (containers/image).
            seen.entry(reg.prefix.clone()).or_insert(reg);
        }
        self.registries.extend(seen);
        Ok(())
    }
}

/// One source of a mirror set, before merging.
struct SetEntry {
    source: String,
    mirrors: Vec<String>,
    pull_from: PullFrom,
    never_contact_source: bool,
    origin: String,
}

#[derive(Deserialize)]
struct Metadata {
    #[serde(default)]
    name: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MirrorSetEntry {
    source: String,
    #[serde(default)]
    mirrors: Vec<String>,
    #[serde(rename = "mirrorSourcePolicy", default)]
    mirror_source_policy: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct IcspEntry {
    source: String,
    #[serde(default)]
    mirrors: Vec<String>,
}

const IDMS: &str = "ImageDigestMirrorSet";
const ITMS: &str = "ImageTagMirrorSet";
const ICSP: &str = "ImageContentSourcePolicy";
/// How deep `kind: List` may nest.
const MAX_LIST_DEPTH: usize = 4;

fn collect_document(
    path: &Path,
    at: &str,
    value: serde_yaml_ng::Value,
    depth: usize,
    out: &mut Vec<SetEntry>,
) -> Result<(), ConfigError> {
    use serde_yaml_ng::Value;
    let bad = |m: String| error(path, None, format!("{at}: {m}"));
    let map = match value {
        Value::Null => return Ok(()), // an empty document (trailing `---`)
        Value::Mapping(m) => m,
        _ => return Err(bad("expected a Kubernetes object (a mapping)".into())),
    };
    let get = |k: &str| map.get(Value::String(k.to_string()));
    let kind = get("kind").and_then(Value::as_str).unwrap_or("");
    let api = get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let name = get("metadata")
        .cloned()
        .and_then(|m| serde_yaml_ng::from_value::<Metadata>(m).ok())
        .and_then(|m| m.name)
        .unwrap_or_default();
    let (field, expected_api, pull_from) = match kind {
        "List" if depth < MAX_LIST_DEPTH => {
            let items = get("items")
                .and_then(Value::as_sequence)
                .ok_or_else(|| bad("kind List without items".into()))?;
            for (i, item) in items.iter().enumerate() {
                collect_document(
                    path,
                    &format!("{at} items[{i}]"),
                    item.clone(),
                    depth + 1,
                    out,
                )?;
            }
            return Ok(());
        }
        IDMS => (
            "imageDigestMirrors",
            "config.openshift.io/v1",
            PullFrom::DigestOnly,
        ),
        ITMS => (
            "imageTagMirrors",
            "config.openshift.io/v1",
            PullFrom::TagOnly,
        ),
        ICSP => (
            "repositoryDigestMirrors",
            "operator.openshift.io/v1alpha1",
            PullFrom::DigestOnly,
        ),
        "" => return Err(bad("no 'kind'".into())),
        other => {
            return Err(bad(format!(
                "kind '{other}' is not an {IDMS}, {ITMS} or {ICSP}"
            )));
        }
    };
    if api != expected_api {
        return Err(bad(format!(
            "{kind} must have apiVersion {expected_api}, found '{api}'"
        )));
    }
    let origin = format!("{}: {kind} {name}", path.display());
    let spec = get("spec").and_then(Value::as_mapping);
    let entries = spec
        .and_then(|s| s.get(Value::String(field.to_string())))
        .and_then(Value::as_sequence)
        .ok_or_else(|| bad(format!("{kind} '{name}' has no spec.{field} list")))?;
    if let Some(spec) = spec
        && let Some(unknown) = spec.keys().filter_map(Value::as_str).find(|k| *k != field)
    {
        return Err(bad(format!(
            "{kind} '{name}': unknown field spec.{unknown} (expected spec.{field})"
        )));
    }
    for (i, entry) in entries.iter().enumerate() {
        let here = format!("{kind} '{name}' spec.{field}[{i}]");
        let (source, mirrors, policy) = if kind == ICSP {
            let e: IcspEntry = serde_yaml_ng::from_value(entry.clone())
                .map_err(|e| bad(format!("{here}: {e}")))?;
            (e.source, e.mirrors, None)
        } else {
            let e: MirrorSetEntry = serde_yaml_ng::from_value(entry.clone())
                .map_err(|e| bad(format!("{here}: {e}")))?;
            (e.source, e.mirrors, e.mirror_source_policy)
        };
        let never_contact_source = match policy.as_deref() {
            None | Some("AllowContactingSource") => false,
            Some("NeverContactSource") => true,
            Some(other) => {
                return Err(bad(format!(
                    "{here}: mirrorSourcePolicy '{other}' is not NeverContactSource or AllowContactingSource"
                )));
            }
        };
        let wildcard_ok = kind != ICSP;
        let source = validate_scope(&source, wildcard_ok)
            .map_err(|m| bad(format!("{here}: source '{source}': {m}")))?;
        let mirrors = mirrors
            .iter()
            .map(|m| {
                validate_scope(m, false).map_err(|why| bad(format!("{here}: mirror '{m}': {why}")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        out.push(SetEntry {
            source,
            mirrors,
            pull_from,
            never_contact_source,
            origin: origin.clone(),
        });
    }
    Ok(())
}

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
struct RegistriesConf {
    #[serde(default)]
    registry: Vec<TomlRegistry>,
    /// The v1 format's `[registries.*]` tables: refused.
    #[serde(default)]
    registries: Option<toml::Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
struct TomlRegistry {
    #[serde(default)]
    prefix: Option<String>,
    #[serde(default)]
    location: Option<String>,
    #[serde(default)]
    insecure: bool,
    #[serde(default)]
    blocked: bool,
    #[serde(default)]
    mirror_by_digest_only: bool,
    #[serde(default)]
    pull_from_mirror: Option<String>,
    #[serde(default)]
    mirror: Vec<TomlMirror>,
}

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
struct TomlMirror {
    location: String,
    #[serde(default)]
    insecure: bool,
    #[serde(default)]
    pull_from_mirror: Option<String>,
}

impl TomlRegistry {
    /// Normalises like containers/image `postProcessRegistries`.
    fn into_registry(self, path: &Path, at: &str) -> Result<Registry, String> {
        let _ = self.insecure; // TLS settings do not change where a pull goes.
        if self.pull_from_mirror.is_some() {
            return Err(
                "pull-from-mirror must be set on a [[registry.mirror]], not on the registry".into(),
            );
        }
        let location = match self.location.as_deref().map(trim_location).transpose()? {
            Some(l) if !l.is_empty() => {
                validate_scope(&l, false).map_err(|m| format!("location '{l}': {m}"))?
            }
            _ => String::new(),
        };
        let prefix = match self.prefix.as_deref().map(trim_location).transpose()? {
            Some(p) if !p.is_empty() => {
                validate_scope(&p, true).map_err(|m| format!("prefix '{p}': {m}"))?
            }
            _ if location.is_empty() => {
                return Err("both location and prefix are unset".into());
            }
            _ => location.clone(),
        };
        if location.is_empty() && !prefix.starts_with("*.") {
            return Err(format!(
                "location is unset and prefix '{prefix}' is not of the form *.example.com"
            ));
        }
        let mut mirrors = Vec::new();
        for (j, m) in self.mirror.into_iter().enumerate() {
            let _ = m.insecure;
            let loc = trim_location(&m.location)?;
            let loc = validate_scope(&loc, false)
                .map_err(|e| format!("mirror #{} location '{loc}': {e}", j + 1))?;
            let pull_from = match (m.pull_from_mirror.as_deref(), self.mirror_by_digest_only) {
                (Some(_), true) => {
                    return Err(format!(
                        "mirror-by-digest-only and pull-from-mirror (mirror '{loc}') cannot both be set"
                    ));
                }
                (None, true) => PullFrom::DigestOnly,
                (None | Some("") | Some("all"), false) => PullFrom::All,
                (Some("digest-only"), false) => PullFrom::DigestOnly,
                (Some("tag-only"), false) => PullFrom::TagOnly,
                (Some(other), false) => {
                    return Err(format!(
                        "pull-from-mirror '{other}' of mirror '{loc}' is not all, digest-only or tag-only"
                    ));
                }
            };
            mirrors.push(Mirror {
                location: loc,
                pull_from,
                origin: format!("{} {at}", path.display()),
            });
        }
        Ok(Registry {
            prefix,
            location,
            blocked: self.blocked,
            mirrors,
            origin: format!("{} {at}", path.display()),
        })
    }
}

fn trim_location(s: &str) -> Result<String, String> {
    let t = s.trim_end_matches('/');
    if t.starts_with("http://") || t.starts_with("https://") {
        return Err(format!("'{s}': URI schemes are not supported"));
    }
    Ok(t.to_string())
}

/// Checks a source, prefix or mirror: `host[:port][/path…]`, or `*.domain` where
/// `wildcard` is allowed. Returns it without a trailing slash.
pub fn validate_scope(scope: &str, wildcard: bool) -> Result<String, String> {
    let s = scope.trim_end_matches('/');
    if s.is_empty() {
        return Err("empty".into());
    }
    if s.contains("://") {
        return Err("URI schemes are not supported (write host[:port]/path)".into());
    }
    if s.contains('@') {
        return Err("must not contain a digest".into());
    }
    if let Some(domain) = s.strip_prefix("*.") {
        if !wildcard {
            return Err("wildcards are not allowed here".into());
        }
        if domain.contains(['/', ':', '*']) || !valid_host(domain) {
            return Err("a wildcard must have the form *.example.com (no port or path)".into());
        }
        return Ok(s.to_string());
    }
    let (host, path) = match s.split_once('/') {
        Some((h, p)) => (h, Some(p)),
        None => (s, None),
    };
    let (name, port) = if host.starts_with('[') {
        match host.find(']') {
            Some(end) => match &host[end + 1..] {
                "" => (&host[..=end], None),
                rest => (&host[..=end], Some(rest.strip_prefix(':').unwrap_or(rest))),
            },
            None => return Err(format!("'{host}' is not a registry host")),
        }
    } else {
        match host.split_once(':') {
            Some((n, p)) => (n, Some(p)),
            None => (host, None),
        }
    };
    if let Some(port) = port
        && (port.is_empty() || port.len() > 5 || !port.bytes().all(|b| b.is_ascii_digit()))
    {
        return Err(format!(
            "'{port}' is not a port (tags are not allowed here)"
        ));
    }
    if !(valid_host(name) || (name.starts_with('[') && name.ends_with(']') && name.len() > 2)) {
        return Err(format!("'{host}' is not a registry host"));
    }
    if path.is_some_and(|p| p.contains(':')) {
        return Err("must not contain a tag (name a registry, namespace or repository)".into());
    }
    if let Some(path) = path
        && let Some(bad) = path.split('/').find(|c| !valid_path_component(c))
    {
        return Err(format!(
            "path component '{bad}' must be lowercase letters and digits, separated by '.', '_', '__' or '-'"
        ));
    }
    Ok(s.to_string())
}

fn valid_host(h: &str) -> bool {
    !h.is_empty()
        && h.len() <= 253
        && h.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sets(text: &str) -> Result<MirrorConfig, ConfigError> {
        let mut c = MirrorConfig::default();
        c.add_mirror_sets(Path::new("sets.yaml"), text)?;
        Ok(c)
    }

    fn conf(text: &str) -> Result<MirrorConfig, ConfigError> {
        let mut c = MirrorConfig::default();
        c.add_registries_conf(Path::new("registries.conf"), text)?;
        Ok(c)
    }

    /// As oc-mirror v2 writes it (`status: {}`, a null creationTimestamp).
    const IDMS_HEAD: &str = "apiVersion: config.openshift.io/v1\nkind: ImageDigestMirrorSet\nmetadata:\n  creationTimestamp: null\n  name: x\nstatus: {}\nspec:\n  imageDigestMirrors:\n";

    #[test]
    fn oc_mirror_output_merges_documents_and_lists() {
        let text = format!(
            "{IDMS_HEAD}  - source: quay.io/org\n    mirrors: [m1.local/org]\n---\n\
             {IDMS_HEAD}  - source: quay.io/org\n    mirrors: [m2.local/org, m1.local/org]\n    mirrorSourcePolicy: NeverContactSource\n---\n\
             apiVersion: v1\nkind: List\nitems:\n- apiVersion: config.openshift.io/v1\n  kind: ImageTagMirrorSet\n  metadata: {{name: t}}\n  spec:\n    imageTagMirrors:\n    - source: quay.io/org/\n      mirrors: [t.local/org/]\n---\n"
        );
        let c = sets(&text).unwrap();
        let regs: Vec<&Registry> = c.registries().collect();
        assert_eq!(regs.len(), 1);
        let r = regs[0];
        assert_eq!(r.prefix, "quay.io/org");
        assert!(
            r.blocked,
            "NeverContactSource on any entry blocks the source"
        );
        let got: Vec<(&str, PullFrom)> = r
            .mirrors
            .iter()
            .map(|m| (m.location.as_str(), m.pull_from))
            .collect();
        assert_eq!(
            got,
            [
                ("m1.local/org", PullFrom::DigestOnly),
                ("m2.local/org", PullFrom::DigestOnly),
                ("t.local/org", PullFrom::TagOnly),
            ]
        );
        assert!(r.mirrors[0].origin.contains("ImageDigestMirrorSet x"));
    }

    #[test]
    fn drop_ins_replace_entries_by_prefix_in_name_order() {
        let dir = tempfile::tempdir().unwrap();
        let main = dir.path().join("registries.conf");
        std::fs::write(
            &main,
            "[[registry]]\nlocation = \"quay.io/org\"\n[[registry.mirror]]\nlocation = \"main.local/org\"\n\
             [[registry]]\nlocation = \"quay.io/other\"\n[[registry.mirror]]\nlocation = \"keep.local/other\"\n",
        )
        .unwrap();
        let d = dir.path().join("registries.conf.d");
        std::fs::create_dir(&d).unwrap();
        std::fs::write(
            d.join("20-late.conf"),
            "[[registry]]\nlocation = \"quay.io/org\"\n[[registry.mirror]]\nlocation = \"late.local/org\"\n",
        )
        .unwrap();
        std::fs::write(
            d.join("10-early.conf"),
            "[[registry]]\nlocation = \"quay.io/org\"\n[[registry.mirror]]\nlocation = \"early.local/org\"\n",
        )
        .unwrap();
        std::fs::write(d.join("README"), "not a drop-in").unwrap();
        let mut c = MirrorConfig::default();
        c.add_registries_conf_file(&main).unwrap();
        let locs: Vec<(String, String)> = c
            .registries()
            .map(|r| (r.prefix.clone(), r.mirrors[0].location.clone()))
            .collect();
        assert_eq!(
            locs,
            [
                ("quay.io/org".to_string(), "late.local/org".to_string()),
                ("quay.io/other".to_string(), "keep.local/other".to_string()),
            ]
        );
    }

    #[test]
    fn bad_files_are_refused_naming_file_and_place() {
        let cases: &[(&str, bool, &str, Option<usize>)] = &[
            (
                "kind: Deployment\napiVersion: apps/v1\n",
                true,
                "kind 'Deployment'",
                None,
            ),
            (
                "apiVersion: config.openshift.io/v1\nkind: ImageDigestMirrorSet\nspec: {}\n",
                true,
                "no spec.imageDigestMirrors",
                None,
            ),
            (
                "apiVersion: v1alpha1\nkind: ImageDigestMirrorSet\nspec: {imageDigestMirrors: []}\n",
                true,
                "apiVersion config.openshift.io/v1",
                None,
            ),
            (
                &format!("{IDMS_HEAD}  - source: quay.io/org\n    mirror: [m.local]\n"),
                true,
                "unknown field `mirror`",
                None,
            ),
            (
                &format!(
                    "{IDMS_HEAD}  - source: quay.io/org\n    mirrors: [m.local]\n    mirrorSourcePolicy: Never\n"
                ),
                true,
                "mirrorSourcePolicy 'Never'",
                None,
            ),
            (
                &format!("{IDMS_HEAD}  - source: https://quay.io/org\n    mirrors: [m.local]\n"),
                true,
                "URI schemes",
                None,
            ),
            (
                &format!("{IDMS_HEAD}  - source: quay.io/Org\n    mirrors: [m.local]\n"),
                true,
                "path component 'Org'",
                None,
            ),
            (
                &format!("{IDMS_HEAD}  - source: quay.io/org\n    mirrors: [\"*.m.local\"]\n"),
                true,
                "wildcards are not allowed",
                None,
            ),
            (
                &format!("{IDMS_HEAD}  - source: quay.io/org:v1\n    mirrors: [m.local]\n"),
                true,
                "must not contain a tag",
                None,
            ),
            (
                "apiVersion: operator.openshift.io/v1alpha1\nkind: ImageContentSourcePolicy\nspec:\n  repositoryDigestMirrors:\n  - source: \"*.quay.io\"\n    mirrors: [m.local]\n",
                true,
                "wildcards are not allowed",
                None,
            ),
            ("a: [unclosed\n", true, "document 1", Some(2)),
            ("", true, "no ImageDigestMirrorSet", None),
            (
                "[[registry]]\nlocation = \"quay.io\"\nmirror-by-digest = true\n",
                false,
                "unknown field `mirror-by-digest`",
                Some(3),
            ),
            (
                "[registries.search]\nregistries = [\"quay.io\"]\n",
                false,
                "v1 format",
                None,
            ),
            (
                "[[registry]]\nprefix = \"quay.io/org\"\n",
                false,
                "location is unset",
                None,
            ),
            (
                "[[registry]]\nlocation = \"quay.io\"\nmirror-by-digest-only = true\n[[registry.mirror]]\nlocation = \"m.local\"\npull-from-mirror = \"all\"\n",
                false,
                "cannot both be set",
                None,
            ),
            (
                "[[registry]]\nlocation = \"quay.io\"\n[[registry.mirror]]\nlocation = \"m.local\"\npull-from-mirror = \"sometimes\"\n",
                false,
                "'sometimes'",
                None,
            ),
            (
                "[[registry]]\nlocation = \"https://quay.io\"\n",
                false,
                "URI schemes",
                None,
            ),
            ("[[registry]\nlocation = 1\n", false, "", Some(1)),
        ];
        for (text, yaml, want, line) in cases {
            let err = if *yaml { sets(text) } else { conf(text) }.unwrap_err();
            let shown = err.to_string();
            let file = if *yaml {
                "sets.yaml"
            } else {
                "registries.conf"
            };
            assert!(shown.starts_with(file), "{text}: {shown}");
            assert!(shown.contains(want), "{text}: want '{want}' in: {shown}");
            if line.is_some() {
                assert_eq!(err.line, *line, "{text}: {shown}");
            }
        }
    }

    #[test]
    fn unreadable_files_name_the_path() {
        let mut c = MirrorConfig::default();
        let err = c
            .add_mirror_sets_file(Path::new("/nonexistent/idms.yaml"))
            .unwrap_err();
        assert!(
            err.to_string().starts_with("/nonexistent/idms.yaml: "),
            "{err}"
        );
        let err = c
            .add_registries_conf_file(Path::new("/nonexistent/registries.conf"))
            .unwrap_err();
        assert!(
            err.to_string().contains("/nonexistent/registries.conf"),
            "{err}"
        );
    }

    #[test]
    fn scopes() {
        for ok in [
            "quay.io",
            "quay.io/org",
            "127.0.0.1:5000/a/b",
            "localhost:5000",
            "[::1]:5000/x",
            "my-registry.example.com/a_b/c.d",
        ] {
            assert_eq!(validate_scope(ok, false).as_deref(), Ok(ok), "{ok}");
        }
        assert_eq!(
            validate_scope("*.example.com", true).as_deref(),
            Ok("*.example.com")
        );
        for bad in [
            "",
            "quay.io/org@sha256:abc",
            "-bad.io",
            "quay.io:port",
            "*.ex.com/x",
            "quay.io//x",
            "[::1",
        ] {
            assert!(validate_scope(bad, true).is_err(), "{bad}");
        }
    }
}
