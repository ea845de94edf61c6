//! Images from pod templates (`--from-manifests`): every container image of the Pods,
//! DaemonSets, Deployments, StatefulSets, ReplicaSets, Jobs, CronJobs, ReplicationControllers
//! and DeploymentConfigs in a set of
//! manifests, with where each pod can land ([`Placement`]) and whether it runs as a Windows
//! HostProcess container.
//!
//! Input: multi-document YAML or JSON, `kind: List` (and `…List`) with `items`. Other kinds
//! (ConfigMap, ServiceAccount, …) are skipped; a document without `kind` is an error, and so is
//! an image that does not parse, such as an operator's `${DRIVER_IMAGE}` placeholder.
//! `docs/cluster.md` gives the semantics and their sources.

mod csi;
mod labels;
mod placement;
mod tolerations;

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;
use std::sync::Arc;

use serde::{Deserialize, Deserializer};
use serde_yaml_ng::{Mapping, Value};

pub use csi::driver_hint;
pub use placement::{KNOWN_LABELS, Operator, Placement, PlacementRefusal, Requirement, Term};

use crate::cluster::nodes::LABEL_OS;
use crate::reference::{ImageRef, ReferenceError, RegistryRef};
use crate::scheduling::{daemonset_tolerations, default_tolerations};

/// How deep `kind: List` may nest.
const MAX_LIST_DEPTH: usize = 4;

/// Where one container's image was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestOrigin {
    /// The manifest file, or `-` for standard input.
    pub path: String,
    /// The object's kind (`DaemonSet`).
    pub kind: String,
    /// The object's namespace, when the manifest gives one.
    pub namespace: Option<String>,
    /// The object's name.
    pub name: String,
    /// The container's name.
    pub container: String,
    /// Whether the container is an init container.
    pub init: bool,
}

impl fmt::Display for ManifestOrigin {
    /// `PATH: DaemonSet NAMESPACE/NAME container NAME` (`init container` for init containers).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {} ", self.path, self.kind)?;
        if let Some(ns) = &self.namespace {
            write!(f, "{ns}/")?;
        }
        let init = if self.init { "init " } else { "" };
        write!(f, "{} {init}container {}", self.name, self.container)
    }
}

/// One container image use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageUse {
    /// The image, as the manifest names it.
    pub image: ImageRef,
    /// Where it was found.
    pub origin: ManifestOrigin,
    /// Where the pod can land.
    pub placement: Placement,
    /// Whether the container runs as a Windows HostProcess container (its own
    /// `securityContext.windowsOptions.hostProcess`, else the pod's).
    pub hostprocess: bool,
    /// The CSI driver the pod serves, when one of its containers names it
    /// ([`driver_hint`]).
    pub driver: Option<String>,
}

/// Manifests that cannot be used, naming the input, the document, the object and the field.
#[derive(Debug, Clone, thiserror::Error)]
#[error("manifests {origin}: {}{reason}", .location.prefix())]
pub struct ManifestsError {
    /// The file path, or `-` for standard input.
    pub origin: String,
    /// Where in the input, as far as known.
    pub location: Box<Location>,
    /// What is wrong.
    pub reason: String,
    /// The error behind it, if another library reported it (shared, so the error stays
    /// `Clone` and small).
    #[source]
    pub source: Option<Arc<ManifestsCause>>,
}

/// Where in a manifest input a [`ManifestsError`] is.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Location {
    /// The document (`document 2`, `document 1 items[3]`), when the problem is in one.
    pub document: Option<String>,
    /// The object (`DaemonSet openshift-cluster-csi-drivers/azure-file-csi-driver-node`).
    pub object: Option<String>,
    /// The field (`spec.template.spec.containers[0] (csi-driver).image`).
    pub field: Option<String>,
}

impl Location {
    /// `document 2: DaemonSet ns/name: spec.x: `, the parts that are known.
    fn prefix(&self) -> String {
        [&self.document, &self.object, &self.field]
            .into_iter()
            .flatten()
            .map(|part| format!("{part}: "))
            .collect()
    }
}

/// The error behind a [`ManifestsError`].
#[derive(Debug, thiserror::Error)]
pub enum ManifestsCause {
    /// The file or directory cannot be read.
    #[error(transparent)]
    Read(std::io::Error),
    /// The text is not YAML, or a field has the wrong type.
    #[error(transparent)]
    Yaml(serde_yaml_ng::Error),
    /// The YAML nests too deep, or its aliases expand too far, to be parsed safely.
    #[error(transparent)]
    Guard(crate::yaml::Refused),
    /// A merge key (`<<`) that merges no mapping.
    #[error(transparent)]
    Merge(crate::yaml::BadMerge),
    /// An image is not a reference.
    #[error(transparent)]
    Reference(ReferenceError),
}

/// A problem inside one object: the field and what is wrong with it.
struct Problem {
    field: String,
    reason: String,
    source: Option<ManifestsCause>,
}

impl Problem {
    fn new(field: impl Into<String>, reason: impl Into<String>) -> Problem {
        Problem {
            field: field.into(),
            reason: reason.into(),
            source: None,
        }
    }
}

/// A `null` read as the type's default (`nodeSelector: null`, `containers: null`).
fn nullable<'de, D: Deserializer<'de>, T: Default + Deserialize<'de>>(d: D) -> Result<T, D::Error> {
    Option::<T>::deserialize(d).map(Option::unwrap_or_default)
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Metadata {
    #[serde(deserialize_with = "nullable")]
    name: String,
    namespace: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct PodSpec {
    #[serde(deserialize_with = "nullable")]
    containers: Vec<Container>,
    #[serde(deserialize_with = "nullable")]
    init_containers: Vec<Container>,
    /// A `null` value is `""`, as the API server's JSON decoder reads it into a Go string.
    #[serde(deserialize_with = "nullable")]
    node_selector: BTreeMap<String, Option<String>>,
    os: Option<PodOs>,
    affinity: Option<Affinity>,
    security_context: Option<SecurityContext>,
    #[serde(deserialize_with = "nullable")]
    tolerations: Vec<tolerations::RawToleration>,
    node_name: Option<String>,
    host_network: Option<bool>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct Container {
    #[serde(deserialize_with = "nullable")]
    name: String,
    image: Option<String>,
    security_context: Option<SecurityContext>,
    #[serde(deserialize_with = "nullable")]
    command: Vec<String>,
    #[serde(deserialize_with = "nullable")]
    args: Vec<String>,
    #[serde(deserialize_with = "nullable")]
    env: Vec<EnvVar>,
}

/// One `env` entry: only literal values are read (a `valueFrom` names no driver).
#[derive(Deserialize, Default)]
#[serde(default)]
struct EnvVar {
    #[serde(deserialize_with = "nullable")]
    value: String,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct PodOs {
    #[serde(deserialize_with = "nullable")]
    name: String,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct SecurityContext {
    windows_options: Option<WindowsOptions>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct WindowsOptions {
    host_process: Option<bool>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct Affinity {
    node_affinity: Option<NodeAffinity>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct NodeAffinity {
    #[serde(rename = "requiredDuringSchedulingIgnoredDuringExecution")]
    required: Option<NodeSelector>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct NodeSelector {
    #[serde(deserialize_with = "nullable")]
    node_selector_terms: Vec<RawTerm>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct RawTerm {
    #[serde(deserialize_with = "nullable")]
    match_expressions: Vec<RawRequirement>,
    #[serde(deserialize_with = "nullable")]
    match_fields: Vec<RawRequirement>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RawRequirement {
    #[serde(deserialize_with = "nullable")]
    key: String,
    #[serde(deserialize_with = "nullable")]
    operator: String,
    #[serde(deserialize_with = "nullable")]
    values: Vec<String>,
}

/// Where a kind keeps its pod spec, or `None` for kinds without one (skipped).
fn pod_spec_path(kind: &str) -> Option<&'static [&'static str]> {
    match kind {
        "Pod" => Some(&["spec"]),
        "DaemonSet"
        | "Deployment"
        | "StatefulSet"
        | "ReplicaSet"
        | "Job"
        | "ReplicationController"
        | "DeploymentConfig" => Some(&["spec", "template", "spec"]),
        "CronJob" => Some(&["spec", "jobTemplate", "spec", "template", "spec"]),
        _ => None,
    }
}

/// Reads manifests from a file, every `*.yaml`, `*.yml` and `*.json` file directly in a
/// directory (sorted by name; subdirectories are not read), or standard input for `-`.
/// Finding no container at all is an error: the input holds no pod template. Each file is
/// read whole, and refused past `max_bytes`.
pub fn read_manifests(path: &Path, max_bytes: u64) -> Result<Vec<ImageUse>, ManifestsError> {
    let shown = path.display().to_string();
    let read_err = |reason: &str, e: Option<std::io::Error>, origin: &str| ManifestsError {
        origin: origin.to_string(),
        location: Box::default(),
        reason: reason.to_string(),
        source: e.map(|e| Arc::new(ManifestsCause::Read(e))),
    };
    let files = if path.is_dir() {
        manifest_files(path).map_err(|e| read_err("cannot read the directory", Some(e), &shown))?
    } else {
        vec![path.to_path_buf()]
    };
    let mut uses = Vec::new();
    for file in &files {
        let origin = file.display().to_string();
        let text = crate::input::read_text(&origin, max_bytes)
            .map_err(|e| read_err(&e.reason, e.source, &origin))?;
        uses.extend(parse_manifests(&text, &origin)?);
    }
    if uses.is_empty() {
        let what = if path.is_dir() {
            "no *.yaml, *.yml or *.json file in the directory holds a"
        } else {
            "holds no"
        };
        return Err(ManifestsError {
            origin: shown,
            location: Box::default(),
            reason: format!(
                "{what} pod template (Pod, DaemonSet, Deployment, StatefulSet, ReplicaSet, \
                 Job, CronJob, ReplicationController or DeploymentConfig with containers)"
            ),
            source: None,
        });
    }
    Ok(uses)
}

/// The manifest files directly in `dir`, sorted by name.
fn manifest_files(dir: &Path) -> std::io::Result<Vec<std::path::PathBuf>> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
        if path.is_file() && matches!(ext, "yaml" | "yml" | "json") {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

/// Every container image of the pod templates in `text` (YAML documents or JSON), in
/// document order, containers before init containers; `origin` names the input in errors and
/// in each [`ManifestOrigin`]. Text without pod templates gives an empty list.
pub fn parse_manifests(text: &str, origin: &str) -> Result<Vec<ImageUse>, ManifestsError> {
    let err = |at: Option<String>, reason: String, source| ManifestsError {
        origin: origin.to_string(),
        location: Box::new(Location {
            document: at,
            ..Location::default()
        }),
        reason,
        source: Some(Arc::new(source)),
    };
    crate::yaml::check_yaml(text)
        .map_err(|e| err(None, "refused".to_string(), ManifestsCause::Guard(e)))?;
    let mut uses = Vec::new();
    for (i, doc) in serde_yaml_ng::Deserializer::from_str(text).enumerate() {
        let at = format!("document {}", i + 1);
        let mut value = Value::deserialize(doc).map_err(|e| {
            let reason = "not YAML or JSON".to_string();
            err(Some(at.clone()), reason, ManifestsCause::Yaml(e))
        })?;
        crate::yaml::merge_keys(&mut value).map_err(|e| {
            err(
                Some(at.clone()),
                "refused".to_string(),
                ManifestsCause::Merge(e),
            )
        })?;
        collect(origin, &at, value, 0, &mut uses)?;
    }
    Ok(uses)
}

/// Adds the image uses of one document (or `List` item) to `out`.
fn collect(
    origin: &str,
    at: &str,
    value: Value,
    depth: usize,
    out: &mut Vec<ImageUse>,
) -> Result<(), ManifestsError> {
    let err = |object: Option<String>, p: Problem| ManifestsError {
        origin: origin.to_string(),
        location: Box::new(Location {
            document: Some(at.to_string()),
            object,
            field: (!p.field.is_empty()).then_some(p.field),
        }),
        reason: p.reason,
        source: p.source.map(Arc::new),
    };
    let map = match value {
        Value::Null => return Ok(()), // an empty document (a trailing `---`)
        Value::Mapping(m) => m,
        _ => {
            let reason = "not a Kubernetes object (expected a mapping with 'kind')";
            return Err(err(None, Problem::new("", reason)));
        }
    };
    let get = |k: &str| map.get(k);
    let kind = match get("kind") {
        Some(Value::String(k)) if !k.is_empty() => k.as_str(),
        Some(_) => return Err(err(None, Problem::new("kind", "not a string"))),
        None => return Err(err(None, Problem::new("kind", "missing"))),
    };
    // `List`, and typed lists (`DaemonSetList`); a custom resource whose kind merely ends in
    // `List` (`IPAllowList`) has no `items` and is skipped as any other kind.
    let items = get("items").and_then(Value::as_sequence);
    if kind == "List" || (kind.ends_with("List") && items.is_some()) {
        let Some(items) = items else {
            return Err(err(
                None,
                Problem::new("items", format!("a {kind} needs a list")),
            ));
        };
        if depth >= MAX_LIST_DEPTH {
            let reason = format!("Lists nested more than {MAX_LIST_DEPTH} deep");
            return Err(err(None, Problem::new("items", reason)));
        }
        for (i, item) in items.iter().enumerate() {
            collect(
                origin,
                &format!("{at} items[{i}]"),
                item.clone(),
                depth + 1,
                out,
            )?;
        }
        return Ok(());
    }
    let Some(spec_path) = pod_spec_path(kind) else {
        return Ok(());
    };
    let meta: Metadata = match get("metadata") {
        Some(m) => serde_yaml_ng::from_value(m.clone())
            .map_err(|e| err(None, yaml_problem("metadata", "not object metadata", e)))?,
        None => Metadata::default(),
    };
    let object = object_name(kind, &meta);
    let uses = pod_labels(&map, spec_path)
        .and_then(|labels| pod_uses(origin, kind, &meta, spec_path, get("spec"), &labels))
        .map_err(|p| err(Some(object), p))?;
    out.extend(uses);
    Ok(())
}

/// The pod's own labels (`metadata.labels` of a Pod, the template's of a controller) of the
/// object `map` whose pod spec sits at `spec_path`, read as the API server reads them (a
/// `null` value is `""`) and checked as it checks them (`ValidateObjectMeta`,
/// `ValidateLabels`).
fn pod_labels(map: &Mapping, spec_path: &[&str]) -> Result<BTreeMap<String, String>, Problem> {
    let template = &spec_path[..spec_path.len() - 1];
    let path: Vec<&str> = template
        .iter()
        .copied()
        .chain(["metadata", "labels"])
        .collect();
    let field = path.join(".");
    let mut value = map.get(path[0]);
    for key in &path[1..] {
        value = value.and_then(|v| v.get(key));
    }
    let Some(value) = value else {
        return Ok(BTreeMap::new());
    };
    let labels: Option<BTreeMap<String, Option<String>>> = serde_yaml_ng::from_value(value.clone())
        .map_err(|e| yaml_problem(&field, "wrong type", e))?;
    let labels: BTreeMap<String, String> = labels
        .unwrap_or_default()
        .into_iter()
        .map(|(k, v)| (k, v.unwrap_or_default()))
        .collect();
    match labels::map_problem(&labels) {
        Some(reason) => Err(Problem::new(field, reason)),
        None => Ok(labels),
    }
}

/// `DaemonSet NAMESPACE/NAME`, as errors name an object.
fn object_name(kind: &str, meta: &Metadata) -> String {
    let name = if meta.name.is_empty() {
        "(no metadata.name)"
    } else {
        &meta.name
    };
    match &meta.namespace {
        Some(ns) => format!("{kind} {ns}/{name}"),
        None => format!("{kind} {name}"),
    }
}

/// A field whose value serde refused.
fn yaml_problem(field: &str, reason: &str, e: serde_yaml_ng::Error) -> Problem {
    Problem {
        source: Some(ManifestsCause::Yaml(e)),
        ..Problem::new(field, reason)
    }
}

/// The image uses of one object whose pod spec sits at `spec_path` (`spec` is the object's
/// `spec`, `labels` the pod's own).
fn pod_uses(
    origin: &str,
    kind: &str,
    meta: &Metadata,
    spec_path: &[&str],
    spec: Option<&Value>,
    labels: &BTreeMap<String, String>,
) -> Result<Vec<ImageUse>, Problem> {
    let field = spec_path.join(".");
    let mut value = spec;
    for key in &spec_path[1..] {
        value = value.and_then(|v| v.get(key));
    }
    let Some(value) = value else {
        return Err(Problem::new(field, "missing (no pod template)"));
    };
    let spec: PodSpec = serde_yaml_ng::from_value(value.clone())
        .map_err(|e| yaml_problem(&bad_field(value, &field), "wrong type", e))?;
    let mut placement = placement(&spec, &field)?;
    placement.node_name = spec.node_name.clone().filter(|n| !n.is_empty());
    placement.os_label = labels.get(LABEL_OS).cloned();
    placement.daemonset = kind == "DaemonSet";
    placement.tolerations =
        tolerations::convert(&spec.tolerations, &format!("{field}.tolerations"))
            .map_err(|(field, reason)| Problem::new(field, reason))?;
    if placement.daemonset {
        let added = daemonset_tolerations(spec.host_network.unwrap_or(false));
        placement.tolerations.extend(added);
    }
    // Then admission: DefaultTolerationSeconds sees every pod, a DaemonSet's with the
    // controller's tolerations already in it.
    let added = default_tolerations(&placement.tolerations);
    placement.tolerations.extend(added);
    let pod_hostprocess = host_process(spec.security_context.as_ref());
    let driver = (spec.containers.iter())
        .chain(&spec.init_containers)
        .find_map(|c| {
            let env = c.env.iter().map(|e| e.value.as_str());
            driver_hint(
                c.command
                    .iter()
                    .chain(&c.args)
                    .map(String::as_str)
                    .chain(env),
            )
        });
    let lists = [
        (false, "containers", &spec.containers),
        (true, "initContainers", &spec.init_containers),
    ];
    let mut uses = Vec::new();
    for (init, list, containers) in lists {
        for (i, c) in containers.iter().enumerate() {
            let at = format!("{field}.{list}[{i}]");
            let image = container_image(kind, meta, c, &at)?;
            if c.name.is_empty() {
                return Err(Problem::new(format!("{at}.name"), "missing"));
            }
            let own = host_process(c.security_context.as_ref());
            uses.push(ImageUse {
                image,
                origin: ManifestOrigin {
                    path: origin.to_string(),
                    kind: kind.to_string(),
                    namespace: meta.namespace.clone(),
                    name: meta.name.clone(),
                    container: c.name.clone(),
                    init,
                },
                placement: placement.clone(),
                hostprocess: own.or(pod_hostprocess).unwrap_or(false),
                driver: driver.clone(),
            });
        }
    }
    Ok(uses)
}

/// The field of the pod spec `value` (at `field`) that does not deserialise, as narrowly as
/// one level of fields and list items can tell (serde's error from a `Value` has no path).
fn bad_field(value: &Value, field: &str) -> String {
    fn fails<T: for<'de> Deserialize<'de>>(v: &Value) -> bool {
        serde_yaml_ng::from_value::<Option<T>>(v.clone()).is_err()
    }
    let Some(map) = value.as_mapping() else {
        return field.to_string();
    };
    type Check = fn(&Value) -> bool;
    let checks: [(&str, Check); 7] = [
        ("nodeSelector", fails::<BTreeMap<String, Option<String>>>),
        ("os", fails::<PodOs>),
        ("affinity", fails::<Affinity>),
        ("securityContext", fails::<SecurityContext>),
        ("tolerations", fails::<Vec<tolerations::RawToleration>>),
        ("nodeName", fails::<String>),
        ("hostNetwork", fails::<bool>),
    ];
    for (key, fails) in checks {
        if map.get(key).is_some_and(fails) {
            return format!("{field}.{key}");
        }
    }
    for key in ["containers", "initContainers"] {
        let Some(v) = map.get(key) else { continue };
        let Some(items) = v.as_sequence() else {
            return match v {
                Value::Null => field.to_string(),
                _ => format!("{field}.{key}"),
            };
        };
        if let Some(i) = items.iter().position(fails::<Container>) {
            return format!("{field}.{key}[{i}]");
        }
    }
    field.to_string()
}

/// `windowsOptions.hostProcess` of a security context, when set.
fn host_process(context: Option<&SecurityContext>) -> Option<bool> {
    context?.windows_options.as_ref()?.host_process
}

/// The image of container `c` (at field `at`), parsed.
fn container_image(
    kind: &str,
    meta: &Metadata,
    c: &Container,
    at: &str,
) -> Result<ImageRef, Problem> {
    let field = match c.name.as_str() {
        "" => format!("{at}.image"),
        name => format!("{at} ({name}).image"),
    };
    let image = c.image.as_deref().unwrap_or("").trim();
    if image.is_empty() {
        return Err(Problem::new(field, "missing"));
    }
    if image.contains("${") || image.contains("{{") {
        let ns = meta
            .namespace
            .as_ref()
            .map_or(String::new(), |n| format!(" -n {n}"));
        let get = format!("oc get {} {}{ns} -o yaml", kind.to_lowercase(), meta.name);
        let reason = format!(
            "'{image}' is a template placeholder, not an image: give the manifest as rendered \
             in the cluster (e.g. `{get}`)"
        );
        return Err(Problem::new(field, reason));
    }
    if image.starts_with("oci:") {
        return Err(Problem::new(
            field,
            format!("'{image}' is not a registry reference (a pod pulls from a registry)"),
        ));
    }
    RegistryRef::parse_pull_spec(image)
        .map(ImageRef::Registry)
        .map_err(|e| Problem {
            source: Some(ManifestsCause::Reference(e)),
            ..Problem::new(field, "not an image reference")
        })
}

/// The placement of a pod spec at `field`: `nodeSelector` and `os.name` ANDed into every term
/// of the required node affinity.
fn placement(spec: &PodSpec, field: &str) -> Result<Placement, Problem> {
    let is = |key: &str, value: &str| Requirement {
        key: key.to_string(),
        op: Operator::In,
        values: vec![value.to_string()],
    };
    let selector: BTreeMap<String, String> = spec
        .node_selector
        .iter()
        .map(|(k, v)| (k.clone(), v.clone().unwrap_or_default()))
        .collect();
    if let Some(reason) = labels::map_problem(&selector) {
        return Err(Problem::new(format!("{field}.nodeSelector"), reason));
    }
    let mut base: Vec<Requirement> = selector.iter().map(|(k, v)| is(k, v)).collect();
    if let Some(os) = spec.os.as_ref().filter(|os| !os.name.is_empty()) {
        base.push(is(LABEL_OS, &os.name));
    }
    let required = spec
        .affinity
        .as_ref()
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|n| n.required.as_ref());
    let Some(required) = required else {
        let terms = if base.is_empty() {
            vec![]
        } else {
            vec![Term {
                expressions: base,
                fields: vec![],
            }]
        };
        return Ok(Placement {
            terms,
            ..Placement::default()
        });
    };
    let at = format!(
        "{field}.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.\
         nodeSelectorTerms"
    );
    if required.node_selector_terms.is_empty() {
        return Err(Problem::new(
            at,
            "empty (a required node affinity needs a term)",
        ));
    }
    let mut terms = Vec::new();
    for (i, raw) in required.node_selector_terms.iter().enumerate() {
        let convert = |list: &[RawRequirement], name: &str| {
            let label = name == "matchExpressions";
            list.iter()
                .enumerate()
                .map(|(j, r)| requirement(r, &format!("{at}[{i}].{name}[{j}]"), label))
                .collect::<Result<Vec<_>, _>>()
        };
        let expressions = convert(&raw.match_expressions, "matchExpressions")?;
        let fields = convert(&raw.match_fields, "matchFields")?;
        for (j, f) in fields.iter().enumerate() {
            field_requirement(f, &format!("{at}[{i}].matchFields[{j}]"))?;
        }
        if expressions.is_empty() && fields.is_empty() {
            continue; // an empty term matches no node
        }
        let expressions = base.iter().cloned().chain(expressions).collect();
        terms.push(Term {
            expressions,
            fields,
        });
    }
    if terms.is_empty() {
        let reason =
            "every term is empty, and an empty term matches no node: the pod can land nowhere";
        return Err(Problem::new(at, reason));
    }
    Ok(Placement {
        terms,
        ..Placement::default()
    })
}

/// A `matchFields` requirement at `field`, checked as the API server validates it
/// (`ValidateNodeFieldSelectorRequirement`): `metadata.name`, `In` or `NotIn`, one value.
fn field_requirement(r: &Requirement, field: &str) -> Result<(), Problem> {
    if r.key != "metadata.name" {
        let reason = format!("'{}' is not a node field (only metadata.name is)", r.key);
        return Err(Problem::new(format!("{field}.key"), reason));
    }
    if !matches!(r.op, Operator::In | Operator::NotIn) {
        let reason = format!("{} is not In or NotIn (matchFields takes only these)", r.op);
        return Err(Problem::new(format!("{field}.operator"), reason));
    }
    if r.values.len() != 1 {
        return Err(Problem::new(
            format!("{field}.values"),
            "must be exactly one node name for matchFields",
        ));
    }
    Ok(())
}

/// One requirement at `field`, checked as the API server validates it
/// (`ValidateNodeSelectorRequirement`): the key a label key (`matchExpressions`); values by operator (`Gt`/`Lt`
/// take one, integer or not: [`Requirement::never_holds`]); each value a label value (the
/// check of Kubernetes 1.33 and later, kubernetes#128212: 1.31 accepts such a value, and the
/// term then matches no node).
/// `label` is false for `matchFields`, whose values are node names.
fn requirement(raw: &RawRequirement, field: &str, label: bool) -> Result<Requirement, Problem> {
    if raw.key.is_empty() {
        return Err(Problem::new(format!("{field}.key"), "missing"));
    }
    if let Some(reason) = Some(&raw.key)
        .filter(|_| label)
        .and_then(|k| labels::key_problem(k))
    {
        return Err(Problem::new(format!("{field}.key"), reason));
    }
    let op = Operator::parse(&raw.operator).ok_or_else(|| {
        Problem::new(
            format!("{field}.operator"),
            format!(
                "'{}' is not In, NotIn, Exists, DoesNotExist, Gt or Lt",
                raw.operator
            ),
        )
    })?;
    let n = raw.values.len();
    let wrong = match op {
        Operator::In | Operator::NotIn if n == 0 => Some("must not be empty"),
        Operator::Exists | Operator::DoesNotExist if n > 0 => Some("must be empty"),
        Operator::Gt | Operator::Lt if n != 1 => Some("must be one value"),
        _ => None,
    };
    if let Some(wrong) = wrong {
        let reason = format!("{wrong} for operator {op}");
        return Err(Problem::new(format!("{field}.values"), reason));
    }
    for (i, value) in raw.values.iter().enumerate().filter(|_| label) {
        if let Some(reason) = labels::value_problem(value) {
            return Err(Problem::new(format!("{field}.values[{i}]"), reason));
        }
    }
    Ok(Requirement {
        key: raw.key.clone(),
        op,
        values: raw.values.clone(),
    })
}

crate::error::input_errors!(ManifestsError);

#[cfg(test)]
mod tests;
