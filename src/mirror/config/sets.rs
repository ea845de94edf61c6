//! Mirror sets as the cluster holds them: `ImageDigestMirrorSet` / `ImageTagMirrorSet`
//! (`config.openshift.io/v1`) and `ImageContentSourcePolicy` (`operator.openshift.io/v1alpha1`),
//! several YAML documents per file and `kind: List`, as `oc-mirror` writes them. Each entry's
//! `source` and `mirrors` become a [`SetEntry`], merged into registry entries by the caller.

use std::path::Path;
use std::sync::Arc;

use serde::Deserialize;
use serde_yaml_ng::Value;

use super::file::{ConfigError, ConfigProblem, error};
use super::model::{MirrorSetKind, PullFrom};
use super::scope::validate_scope;

/// One source of a mirror set, before merging.
pub(super) struct SetEntry {
    pub(super) source: String,
    pub(super) mirrors: Vec<String>,
    pub(super) pull_from: PullFrom,
    pub(super) never_contact_source: bool,
    pub(super) origin: String,
    pub(super) kind: MirrorSetKind,
    pub(super) at: String,
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

/// One kind of mirror set: where its entries are and which pulls its mirrors serve.
struct SetKind {
    kind: &'static str,
    api_version: &'static str,
    /// The list under `spec`.
    field: &'static str,
    pull_from: PullFrom,
    /// ICSP: entries without `mirrorSourcePolicy`, sources without wildcards.
    icsp: bool,
    /// Which object it is.
    set: MirrorSetKind,
}

const IDMS: &str = "ImageDigestMirrorSet";
const ITMS: &str = "ImageTagMirrorSet";
const ICSP: &str = "ImageContentSourcePolicy";

const SET_KINDS: [SetKind; 3] = [
    SetKind {
        kind: IDMS,
        api_version: "config.openshift.io/v1",
        field: "imageDigestMirrors",
        pull_from: PullFrom::DigestOnly,
        icsp: false,
        set: MirrorSetKind::Idms,
    },
    SetKind {
        kind: ITMS,
        api_version: "config.openshift.io/v1",
        field: "imageTagMirrors",
        pull_from: PullFrom::TagOnly,
        icsp: false,
        set: MirrorSetKind::Itms,
    },
    SetKind {
        kind: ICSP,
        api_version: "operator.openshift.io/v1alpha1",
        field: "repositoryDigestMirrors",
        pull_from: PullFrom::DigestOnly,
        icsp: true,
        set: MirrorSetKind::Icsp,
    },
];

/// How deep `kind: List` may nest.
const MAX_LIST_DEPTH: usize = 4;

/// Every mirror-set entry of the YAML `text` read from `path`, in document order.
pub(super) fn collect(path: &Path, text: &str) -> Result<Vec<SetEntry>, ConfigError> {
    crate::yaml::check_nesting(text)
        .map_err(|e| error(path, Some(e.line), ConfigProblem::Invalid(e.to_string())))?;
    let mut entries = Vec::new();
    for (i, doc) in serde_yaml_ng::Deserializer::from_str(text).enumerate() {
        let at = format!("document {}", i + 1);
        let mut value = Value::deserialize(doc).map_err(|e| {
            let line = e.location().map(|l| l.line());
            let source = Arc::new(e);
            error(
                path,
                line,
                ConfigProblem::Yaml {
                    at: at.clone(),
                    source,
                },
            )
        })?;
        crate::yaml::merge_keys(&mut value)
            .map_err(|e| error(path, None, ConfigProblem::Invalid(format!("{at}: {e}"))))?;
        collect_document(path, &at, value, 0, &mut entries)?;
    }
    Ok(entries)
}

/// A problem at `at` in the file, said in full.
fn invalid(path: &Path, at: &str, message: String) -> ConfigError {
    error(
        path,
        None,
        ConfigProblem::Invalid(format!("{at}: {message}")),
    )
}

fn collect_document(
    path: &Path,
    at: &str,
    value: Value,
    depth: usize,
    out: &mut Vec<SetEntry>,
) -> Result<(), ConfigError> {
    let bad = |m: String| invalid(path, at, m);
    let map = match value {
        Value::Null => return Ok(()), // an empty document (trailing `---`)
        Value::Mapping(m) => m,
        _ => return Err(bad("expected a Kubernetes object (a mapping)".into())),
    };
    let get = |k: &str| map.get(Value::String(k.to_string()));
    let kind = get("kind").and_then(Value::as_str).unwrap_or("");
    if kind == "List" && depth < MAX_LIST_DEPTH {
        let items = get("items")
            .and_then(Value::as_sequence)
            .ok_or_else(|| bad("kind List without items".into()))?;
        for (i, item) in items.iter().enumerate() {
            let at = format!("{at} items[{i}]");
            collect_document(path, &at, item.clone(), depth + 1, out)?;
        }
        return Ok(());
    }
    let set = set_kind(kind).map_err(bad)?;
    let api = get("apiVersion").and_then(Value::as_str).unwrap_or("");
    if api != set.api_version {
        let expected = set.api_version;
        return Err(bad(format!(
            "{kind} must have apiVersion {expected}, found '{api}'"
        )));
    }
    let name = get("metadata")
        .cloned()
        .and_then(|m| serde_yaml_ng::from_value::<Metadata>(m).ok())
        .and_then(|m| m.name)
        .unwrap_or_default();
    let entries = spec_entries(set, &name, get("spec")).map_err(bad)?;
    let origin = format!("{}: {kind} {name}", path.display());
    for (i, entry) in entries.iter().enumerate() {
        let here = format!("{at}: {kind} '{name}' spec.{}[{i}]", set.field);
        out.push(set_entry(path, &here, set, entry, &origin)?);
    }
    Ok(())
}

/// The mirror-set kind named by `kind`, or what is wrong with it.
fn set_kind(kind: &str) -> Result<&'static SetKind, String> {
    match SET_KINDS.iter().find(|k| k.kind == kind) {
        Some(set) => Ok(set),
        None if kind.is_empty() => Err("no 'kind'".into()),
        None => Err(format!("kind '{kind}' is not an {IDMS}, {ITMS} or {ICSP}")),
    }
}

/// The entry list under `spec`, which holds nothing else.
fn spec_entries<'a>(
    set: &SetKind,
    name: &str,
    spec: Option<&'a Value>,
) -> Result<&'a Vec<Value>, String> {
    let (kind, field) = (set.kind, set.field);
    let spec = spec.and_then(Value::as_mapping);
    let entries = spec
        .and_then(|s| s.get(Value::String(field.to_string())))
        .and_then(Value::as_sequence)
        .ok_or_else(|| format!("{kind} '{name}' has no spec.{field} list"))?;
    if let Some(spec) = spec
        && let Some(unknown) = spec.keys().filter_map(Value::as_str).find(|k| *k != field)
    {
        return Err(format!(
            "{kind} '{name}': unknown field spec.{unknown} (expected spec.{field})"
        ));
    }
    Ok(entries)
}

/// One entry of a mirror set, at `here` (document, kind, name and index).
fn set_entry(
    path: &Path,
    here: &str,
    set: &SetKind,
    entry: &Value,
    origin: &str,
) -> Result<SetEntry, ConfigError> {
    let malformed = |e| {
        let source = Arc::new(e);
        error(
            path,
            None,
            ConfigProblem::Entry {
                at: here.to_string(),
                source,
            },
        )
    };
    let (source, mirrors, policy) = if set.icsp {
        let e: IcspEntry = serde_yaml_ng::from_value(entry.clone()).map_err(malformed)?;
        (e.source, e.mirrors, None)
    } else {
        let e: MirrorSetEntry = serde_yaml_ng::from_value(entry.clone()).map_err(malformed)?;
        (e.source, e.mirrors, e.mirror_source_policy)
    };
    let never_contact_source = match policy.as_deref() {
        None | Some("AllowContactingSource") => false,
        Some("NeverContactSource") => true,
        Some(other) => {
            return Err(error(
                path,
                None,
                ConfigProblem::Invalid(format!(
                    "{here}: mirrorSourcePolicy '{other}' is not NeverContactSource or AllowContactingSource"
                )),
            ));
        }
    };
    let scope = |what: &str, value: &str, wildcard: bool| {
        validate_scope(value, wildcard).map_err(|source| {
            let at = here.to_string();
            let (what, value) = (format!("{what} "), value.to_string());
            error(
                path,
                None,
                ConfigProblem::Scope {
                    at,
                    what,
                    value,
                    source,
                },
            )
        })
    };
    let source = scope("source", &source, !set.icsp)?;
    let mirrors = mirrors
        .iter()
        .map(|m| scope("mirror", m, false))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(SetEntry {
        source,
        mirrors,
        pull_from: set.pull_from,
        never_contact_source,
        origin: origin.to_string(),
        kind: set.set,
        at: here.to_string(),
    })
}
