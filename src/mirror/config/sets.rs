//! Mirror sets as the cluster holds them: `ImageDigestMirrorSet` / `ImageTagMirrorSet`
//! (`config.openshift.io/v1`) and `ImageContentSourcePolicy` (`operator.openshift.io/v1alpha1`),
//! several YAML documents per file and `kind: List`, as `oc-mirror` writes them. Each entry
//! becomes a [`MirrorSet`] as written, merged into registry entries by the caller. An object
//! whose entry list is empty or absent is a valid configuration without mirrors.

use std::path::Path;
use std::sync::Arc;

use serde::Deserialize;
use serde_yaml_ng::Value;

use super::file::{ConfigProblem, MirrorConfigError, error};
use super::model::{MirrorSet, MirrorSetKind, SourcePolicy};
use super::scope::validate_scope;

/// What a mirror-set file holds: how many mirror-set objects, and their entries in document
/// order.
#[derive(Default)]
pub(super) struct Collected {
    pub(super) objects: usize,
    pub(super) entries: Vec<MirrorSet>,
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

/// One kind of mirror set: where its entries are.
struct SetKind {
    kind: &'static str,
    api_version: &'static str,
    /// The list under `spec`.
    field: &'static str,
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
        icsp: false,
        set: MirrorSetKind::Idms,
    },
    SetKind {
        kind: ITMS,
        api_version: "config.openshift.io/v1",
        field: "imageTagMirrors",
        icsp: false,
        set: MirrorSetKind::Itms,
    },
    SetKind {
        kind: ICSP,
        api_version: "operator.openshift.io/v1alpha1",
        field: "repositoryDigestMirrors",
        icsp: true,
        set: MirrorSetKind::Icsp,
    },
];

/// How deep `kind: List` may nest.
const MAX_LIST_DEPTH: usize = 4;

/// Every mirror-set entry of the YAML `text` read from `path`, in document order.
pub(super) fn collect(path: &Path, text: &str) -> Result<Collected, MirrorConfigError> {
    crate::yaml::check_yaml(text)
        .map_err(|e| error(path, e.line(), ConfigProblem::Invalid(e.to_string())))?;
    let mut collected = Collected::default();
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
        collect_document(path, &at, value, 0, &mut collected)?;
    }
    Ok(collected)
}

/// A problem at `at` in the file, said in full.
fn invalid(path: &Path, at: &str, message: String) -> MirrorConfigError {
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
    out: &mut Collected,
) -> Result<(), MirrorConfigError> {
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
    out.objects += 1;
    for (i, entry) in entries.iter().enumerate() {
        let here = format!("{at}: {kind} '{name}' spec.{}[{i}]", set.field);
        out.entries
            .push(set_entry(path, &here, set, entry, &origin)?);
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

/// The entry list under `spec`, which holds nothing else. The list is optional (openshift/api
/// `ImageDigestMirrorSetSpec`, `+optional`): empty, null or absent, it is no entry at all.
fn spec_entries<'a>(
    set: &SetKind,
    name: &str,
    spec: Option<&'a Value>,
) -> Result<&'a [Value], String> {
    let (kind, field) = (set.kind, set.field);
    let spec = match spec {
        Some(Value::Mapping(m)) => m,
        Some(Value::Null) | None => return Err(format!("{kind} '{name}' has no spec")),
        Some(_) => return Err(format!("{kind} '{name}': spec is not a mapping")),
    };
    if let Some(unknown) = spec.keys().filter_map(Value::as_str).find(|k| *k != field) {
        return Err(format!(
            "{kind} '{name}': unknown field spec.{unknown} (expected spec.{field})"
        ));
    }
    match spec.get(Value::String(field.to_string())) {
        None | Some(Value::Null) => Ok(&[]),
        Some(Value::Sequence(entries)) => Ok(entries),
        Some(_) => Err(format!("{kind} '{name}': spec.{field} is not a list")),
    }
}

/// One entry of a mirror set, at `here` (document, kind, name and index).
fn set_entry(
    path: &Path,
    here: &str,
    set: &SetKind,
    entry: &Value,
    origin: &str,
) -> Result<MirrorSet, MirrorConfigError> {
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
    let policy = match policy.as_deref() {
        None => SourcePolicy::Unset,
        Some("AllowContactingSource") => SourcePolicy::AllowContactingSource,
        Some("NeverContactSource") => SourcePolicy::NeverContactSource,
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
            let (what, value) = (format!("{what} "), crate::secret::redact_location(value));
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
    Ok(MirrorSet {
        kind: set.set,
        source,
        mirrors,
        policy,
        origin: origin.to_string(),
        at: here.to_string(),
    })
}
