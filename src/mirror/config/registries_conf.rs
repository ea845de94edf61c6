//! containers-registries.conf(5) v2 (TOML): `[[registry]]` tables and their
//! `[[registry.mirror]]`s, normalised like containers/image `postProcessRegistries`.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use serde::Deserialize;

use super::file::{ConfigProblem, MirrorConfigError, error};
use super::model::{Mirror, PullFrom, Registry};
use super::scope::{ScopeError, validate_scope};

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

/// The registry entries of registries.conf `text` read from `path`, by prefix; within one
/// file the first entry of a prefix wins (containers/image).
pub(super) fn parse(
    path: &Path,
    text: &str,
) -> Result<BTreeMap<String, Registry>, MirrorConfigError> {
    crate::yaml::check_nesting(text)
        .map_err(|e| error(path, Some(e.line), ConfigProblem::Invalid(e.to_string())))?;
    let conf: RegistriesConf = toml::from_str(text).map_err(|e| {
        let line = e.span().map(|s| {
            text.as_bytes()[..s.start.min(text.len())]
                .iter()
                .filter(|b| **b == b'\n')
                .count()
                + 1
        });
        error(path, line, ConfigProblem::Toml(Arc::new(e)))
    })?;
    if conf.registries.is_some() {
        return Err(error(
            path,
            None,
            ConfigProblem::Invalid(
                "registries.conf v1 format ([registries.search] …) is not supported; use v2 [[registry]] tables"
                    .into(),
            ),
        ));
    }
    let mut seen: BTreeMap<String, Registry> = BTreeMap::new();
    for (i, r) in conf.registry.into_iter().enumerate() {
        let at = format!("[[registry]] #{}", i + 1);
        let reg = r
            .into_registry(path, &at)
            .map_err(|p| error(path, None, p))?;
        seen.entry(reg.prefix.clone()).or_insert(reg);
    }
    Ok(seen)
}

/// A scope of the entry at `at` that is not valid: `what` names it (with a trailing space,
/// or empty).
fn bad_scope(at: &str, what: String, value: &str, source: ScopeError) -> ConfigProblem {
    ConfigProblem::Scope {
        at: at.to_string(),
        what,
        value: crate::secret::redact_location(value),
        source,
    }
}

impl TomlRegistry {
    /// Normalises like containers/image `postProcessRegistries`.
    fn into_registry(self, path: &Path, at: &str) -> Result<Registry, ConfigProblem> {
        let _ = self.insecure; // TLS settings do not change where a pull goes.
        let invalid = |m: &str| ConfigProblem::Invalid(format!("{at}: {m}"));
        if self.pull_from_mirror.is_some() {
            return Err(invalid(
                "pull-from-mirror must be set on a [[registry.mirror]], not on the registry",
            ));
        }
        let location = match self
            .location
            .as_deref()
            .map(|l| trim_location(at, l))
            .transpose()?
        {
            Some(l) if !l.is_empty() => {
                validate_scope(&l, false).map_err(|e| bad_scope(at, "location ".into(), &l, e))?
            }
            _ => String::new(),
        };
        let prefix = match self
            .prefix
            .as_deref()
            .map(|p| trim_location(at, p))
            .transpose()?
        {
            Some(p) if !p.is_empty() => {
                validate_scope(&p, true).map_err(|e| bad_scope(at, "prefix ".into(), &p, e))?
            }
            _ if location.is_empty() => return Err(invalid("both location and prefix are unset")),
            _ => location.clone(),
        };
        if location.is_empty() && !prefix.starts_with("*.") {
            // containers/image refuses the whole file here, blocked or not (the node would
            // not start pulling): so does imgcheck, naming the fix.
            return Err(invalid(&format!(
                "location is unset and prefix '{prefix}' is not of the form *.example.com \
                 (podman and CRI-O refuse such a file too); add location = \"{prefix}\""
            )));
        }
        let origin = format!("{} {at}", path.display());
        let mirrors = self
            .mirror
            .into_iter()
            .enumerate()
            .map(|(j, m)| m.into_mirror(at, j, self.mirror_by_digest_only, &origin))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Registry {
            prefix,
            location,
            blocked: self.blocked,
            mirrors,
            origin,
        })
    }
}

impl TomlMirror {
    /// The `j`-th mirror of the entry at `at`.
    fn into_mirror(
        self,
        at: &str,
        j: usize,
        by_digest_only: bool,
        origin: &str,
    ) -> Result<Mirror, ConfigProblem> {
        let _ = self.insecure;
        let loc = trim_location(at, &self.location)?;
        let what = format!("mirror #{} location ", j + 1);
        let loc = validate_scope(&loc, false).map_err(|e| bad_scope(at, what, &loc, e))?;
        let invalid = |m: String| ConfigProblem::Invalid(format!("{at}: {m}"));
        let pull_from = match (self.pull_from_mirror.as_deref(), by_digest_only) {
            (Some(_), true) => {
                return Err(invalid(format!(
                    "mirror-by-digest-only and pull-from-mirror (mirror '{loc}') cannot both be set"
                )));
            }
            (None, true) => PullFrom::DigestOnly,
            (None | Some("") | Some("all"), false) => PullFrom::All,
            (Some("digest-only"), false) => PullFrom::DigestOnly,
            (Some("tag-only"), false) => PullFrom::TagOnly,
            (Some(other), false) => {
                return Err(invalid(format!(
                    "pull-from-mirror '{other}' of mirror '{loc}' is not all, digest-only or tag-only"
                )));
            }
        };
        Ok(Mirror {
            location: loc,
            pull_from,
            origin: origin.to_string(),
        })
    }
}

/// A location or prefix without its trailing slashes; URLs are refused.
fn trim_location(at: &str, s: &str) -> Result<String, ConfigProblem> {
    let t = s.trim_end_matches('/');
    if t.starts_with("http://") || t.starts_with("https://") {
        return Err(bad_scope(at, String::new(), s, ScopeError::LocationScheme));
    }
    Ok(t.to_string())
}
