//! Many references at once: reading reference lists (plain files, oc-mirror
//! ImageSetConfiguration) and verifying them with bounded concurrency.

use std::sync::Arc;

use futures::StreamExt;
use serde::Deserialize;

use crate::engine::{Finding, ImageReport, Origin, Rule, judge};
use crate::graph::WalkOptions;
use crate::platform::RuntimeProfile;
use crate::policy::Policy;
use crate::reference::ImageRef;
use crate::session::Session;
use crate::source::FetchError;

/// A reference list that cannot be used: the file, the line (when known), the problem and
/// its cause.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{origin}: {reason}")]
pub struct ListError {
    /// `FILE` or `FILE:LINE`.
    pub origin: String,
    /// What is wrong.
    pub reason: String,
    /// The error behind it, if another library reported it.
    #[source]
    pub source: Option<ListCause>,
}

/// The error behind a [`ListError`].
#[derive(Debug, Clone, thiserror::Error)]
pub enum ListCause {
    /// The file (or standard input) cannot be read.
    #[error(transparent)]
    Read(Arc<std::io::Error>),
    /// The file is not the YAML document expected.
    #[error(transparent)]
    Yaml(Arc<serde_yaml_ng::Error>),
}

impl ListError {
    fn new(origin: impl Into<String>, reason: impl Into<String>) -> ListError {
        ListError {
            origin: origin.into(),
            reason: reason.into(),
            source: None,
        }
    }

    fn caused_by(mut self, cause: ListCause) -> ListError {
        self.source = Some(cause);
        self
    }
}

fn read_all(path: &str) -> Result<String, ListError> {
    crate::input::read_text(path)
        .map_err(|(reason, e)| ListError::new(path, reason).caused_by(ListCause::Read(Arc::new(e))))
}

/// Parses a reference list: one reference per line, `#` starts a comment, blank lines ignored.
pub fn parse_reference_list(text: &str, origin: &str) -> Result<Vec<ImageRef>, ListError> {
    let mut refs = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let r = line
            .parse::<ImageRef>()
            .map_err(|e| ListError::new(format!("{origin}:{}", n + 1), e.to_string()))?;
        refs.push(r);
    }
    Ok(refs)
}

/// Reads a reference list from a file, or standard input for `-`.
pub fn read_reference_list(path: &str) -> Result<Vec<ImageRef>, ListError> {
    parse_reference_list(&read_all(path)?, path)
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ImageSetConfiguration {
    kind: String,
    api_version: String,
    #[serde(default)]
    mirror: Option<MirrorSection>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct MirrorSection {
    #[serde(default)]
    additional_images: Vec<AdditionalImage>,
    /// Sections oc-mirror reads and imgcheck does not (release payloads, operator catalogs,
    /// Helm charts): their images are not checked, and a warning says so.
    #[serde(default)]
    platform: serde_yaml_ng::Value,
    #[serde(default)]
    operators: serde_yaml_ng::Value,
    #[serde(default)]
    helm: serde_yaml_ng::Value,
}

impl MirrorSection {
    /// The sections present (not empty) that imgcheck does not read, as `mirror.NAME`.
    fn unread(&self) -> Vec<&'static str> {
        let present = |v: &serde_yaml_ng::Value| match v {
            serde_yaml_ng::Value::Null => false,
            serde_yaml_ng::Value::Sequence(s) => !s.is_empty(),
            serde_yaml_ng::Value::Mapping(m) => !m.is_empty(),
            _ => true,
        };
        [
            ("mirror.platform", &self.platform),
            ("mirror.operators", &self.operators),
            ("mirror.helm", &self.helm),
        ]
        .into_iter()
        .filter(|(_, v)| present(v))
        .map(|(name, _)| name)
        .collect()
    }
}

/// The references of an ImageSetConfiguration, and what in it was not read.
#[derive(Debug, Clone)]
pub struct ImageSet {
    /// `mirror.additionalImages[].name`, in order.
    pub images: Vec<ImageRef>,
    /// One line per section present that imgcheck does not check (`mirror.platform`,
    /// `mirror.operators`, `mirror.helm`): the CLI prints them as warnings.
    pub warnings: Vec<String>,
}

#[derive(Deserialize)]
struct AdditionalImage {
    name: String,
}

/// Parses an oc-mirror ImageSetConfiguration (`mirror.openshift.io/v2alpha1`): its
/// `mirror.additionalImages[].name` references, and a warning for each section imgcheck does
/// not read (release payloads, operator catalogs and Helm charts are not checked).
pub fn parse_imageset(text: &str, origin: &str) -> Result<ImageSet, ListError> {
    let err = |reason: String| ListError::new(origin, reason);
    crate::yaml::check_nesting(text).map_err(|e| err(e.to_string()))?;
    let config: ImageSetConfiguration = serde_yaml_ng::from_str(text)
        .map_err(|e| err("cannot parse".to_string()).caused_by(ListCause::Yaml(Arc::new(e))))?;
    if config.kind != "ImageSetConfiguration" {
        return Err(err(format!(
            "kind is '{}', expected ImageSetConfiguration",
            config.kind
        )));
    }
    if !config.api_version.starts_with("mirror.openshift.io/") {
        return Err(err(format!(
            "apiVersion is '{}', expected mirror.openshift.io/v2alpha1",
            config.api_version
        )));
    }
    let (images, unread) = match config.mirror {
        Some(m) => {
            let unread = m.unread();
            (m.additional_images, unread)
        }
        None => (Vec::new(), Vec::new()),
    };
    if images.is_empty() {
        let also = match unread.is_empty() {
            true => String::new(),
            false => format!(
                " ({} not read: imgcheck checks additionalImages only)",
                unread.join(", ")
            ),
        };
        return Err(err(format!(
            "mirror.additionalImages lists no images{also}"
        )));
    }
    let images = images
        .iter()
        .enumerate()
        .map(|(i, a)| {
            a.name.parse::<ImageRef>().map_err(|e| {
                ListError::new(
                    format!("{origin}: mirror.additionalImages[{i}]"),
                    e.to_string(),
                )
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let warnings = unread
        .iter()
        .map(|section| {
            format!(
                "{origin}: {section} is not checked: imgcheck verifies mirror.additionalImages \
                 only; list the images to check there (or in --from-file)"
            )
        })
        .collect();
    Ok(ImageSet { images, warnings })
}

/// Reads an ImageSetConfiguration file.
pub fn read_imageset(path: &str) -> Result<ImageSet, ListError> {
    parse_imageset(&read_all(path)?, path)
}

/// Settings of a verify run.
#[derive(Debug, Clone)]
pub struct VerifyRun {
    /// The policy.
    pub policy: Policy,
    /// Runtime profiles to judge with.
    pub runtimes: Vec<RuntimeProfile>,
    /// Walk options (per image).
    pub walk: WalkOptions,
    /// Images in flight at once.
    pub images_in_flight: usize,
}

/// What happened to one reference.
pub enum Outcome {
    /// It was judged (or could not be fetched: an `error` verdict).
    Report(ImageReport),
    /// The user's input is wrong (e.g. not an OCI layout): ends the run as bad input ([`crate::error::Fault::Input`]).
    BadInput(String),
}

impl Outcome {
    /// The outcome for a reference whose graph could not be fetched: bad input ends the run,
    /// a tag or repository that does not exist is that image's `fail` verdict (`not-found`:
    /// retrying cannot fix it), anything else is its `error` verdict.
    pub fn fetch_failed(reference: &ImageRef, error: FetchError) -> Outcome {
        match error {
            FetchError::BadInput(m) => Outcome::BadInput(crate::error::one_line(&m)),
            e @ FetchError::NotFound(_) => Outcome::Report(ImageReport::not_found(
                &reference.to_string(),
                &crate::error::one_line(&e),
            )),
            e => Outcome::Report(ImageReport::unavailable(
                &reference.to_string(),
                &crate::error::one_line(&e),
            )),
        }
    }
}

/// Runs `check` on every item, at most `in_flight` at once, calling `on_done` as each
/// finishes; results come back in input order. One item's failure does not stop the others.
pub async fn run_bounded<'a, T, F, Fut>(
    items: &'a [T],
    in_flight: usize,
    on_done: &(dyn Fn(&Outcome) + Sync),
    check: F,
) -> Vec<Outcome>
where
    F: Fn(&'a T) -> Fut,
    Fut: Future<Output = Outcome>,
{
    futures::stream::iter(items.iter().map(|item| {
        let pending = check(item);
        async move {
            let outcome = pending.await;
            on_done(&outcome);
            outcome
        }
    }))
    .buffered(in_flight.max(1))
    .collect()
    .await
}

/// An image a run verifies: its reference, where it was found, and — for an image whose pods
/// land on fewer hosts than the run judges — its own scope.
#[derive(Debug, Clone)]
pub struct Target {
    /// The reference.
    pub reference: ImageRef,
    /// Where it was found (empty: typed or listed).
    pub origins: Vec<Origin>,
    /// The narrower policy it is judged against, if any.
    pub scope: Option<Scope>,
}

/// The hosts an image's pods can land on, as a policy, and why.
#[derive(Debug, Clone)]
pub struct Scope {
    /// The run's policy narrowed to those hosts (and the pods' isolation).
    pub policy: Policy,
    /// Where the pods can land, for messages (e.g. `kubernetes.io/os In [windows]`).
    pub placement: String,
}

impl Scope {
    /// The warning a report of an image in this scope carries when its pods land on no host
    /// judged (`no-host-in-scope`): only its content was checked. `None` when some host is in
    /// scope.
    pub fn no_host(&self) -> Option<Finding> {
        self.policy.hosts().is_empty().then(|| {
            Finding::new(
                Rule::NoHostInScope,
                format!(
                    "its pods can land on no host judged ({}): only its content was checked",
                    self.placement
                ),
                None,
            )
        })
    }

    /// Adds the [`Scope::no_host`] warning, if any, to `report` (findings kept in severity
    /// order) when its image was read (a report without a digest checked nothing). The
    /// verdict stays: a warning does not change it.
    pub fn note_on(&self, report: &mut ImageReport) {
        if report.digest.is_none() {
            return;
        }
        if let Some(f) = self.no_host() {
            report.findings.push(f);
            report.findings.sort_by_key(|f| f.severity);
        }
    }
}

impl Target {
    /// A reference typed or listed: judged against the run's policy.
    pub fn plain(reference: ImageRef) -> Target {
        Target {
            reference,
            origins: vec![],
            scope: None,
        }
    }

    /// Judges the graph of this target: against its scope, else the run's policy; an empty
    /// scope judges the content only and says so (`no-host-in-scope`).
    pub fn judge(&self, graph: &crate::graph::Graph, run: &VerifyRun) -> ImageReport {
        let policy = self.scope.as_ref().map_or(&run.policy, |s| &s.policy);
        let mut report = judge(graph, policy, &run.runtimes);
        report.origins = self.origins.clone();
        if let Some(scope) = &self.scope {
            scope.note_on(&mut report);
        }
        report
    }
}

/// Verifies every target, at most `images_in_flight` at once (see [`run_bounded`]).
pub async fn verify_all(
    session: &Session,
    targets: &[Target],
    run: &VerifyRun,
    on_done: &(dyn Fn(&Outcome) + Sync),
) -> Vec<Outcome> {
    run_bounded(targets, run.images_in_flight, on_done, |t| async move {
        match session.graph(&t.reference, run.walk).await {
            Ok(graph) => Outcome::Report(t.judge(&graph, run)),
            Err(e) => {
                let mut outcome = Outcome::fetch_failed(&t.reference, e);
                if let Outcome::Report(r) = &mut outcome {
                    r.origins = t.origins.clone();
                }
                outcome
            }
        }
    })
    .await
}

crate::error::input_errors!(ListError);

#[cfg(test)]
mod tests {
    use super::*;

    /// A fetch error's cause reaches the outcome's text: the finding, or the bad input.
    #[test]
    fn fetch_failures_carry_their_causes() {
        let r: ImageRef = "q.io/a/b:v1".parse().unwrap();
        let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        let e = FetchError::unavailable_by("manifest q.io/a/b:v1", refused);
        let Outcome::Report(report) = Outcome::fetch_failed(&r, e) else {
            panic!("an unavailable source is the image's error verdict");
        };
        let message = &report.findings[0].message;
        assert_eq!(message, "manifest q.io/a/b:v1: connection refused");
        let denied = std::io::Error::from(std::io::ErrorKind::PermissionDenied);
        let e = FetchError::bad_input_by("oci:x: blob sha256:a: cannot open", denied);
        let Outcome::BadInput(m) = Outcome::fetch_failed(&r, e) else {
            panic!("bad input ends the run");
        };
        assert_eq!(m, "oci:x: blob sha256:a: cannot open: permission denied");
    }

    #[test]
    fn reference_lists() {
        let text = "# release 4.18\nquay.io/a/b:v1\n\n  oci:fixtures/layouts/good  # local\nquay.io/a/c@sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\n";
        let refs = parse_reference_list(text, "list.txt").unwrap();
        assert_eq!(refs.len(), 3);
        assert_eq!(refs[1].to_string(), "oci:fixtures/layouts/good");
        let err = parse_reference_list("quay.io/a/b:v1\nNOT VALID\n", "list.txt").unwrap_err();
        assert_eq!(err.origin, "list.txt:2");
        assert!(err.to_string().contains("invalid reference 'NOT VALID'"));
        assert!(parse_reference_list("# nothing\n", "x").unwrap().is_empty());
    }

    #[test]
    fn imagesets() {
        let text = "kind: ImageSetConfiguration\napiVersion: mirror.openshift.io/v2alpha1\nmirror:\n  additionalImages:\n  - name: quay.io/org/azure-file:v4.18\n  - name: registry.k8s.io/sig-storage/livenessprobe:v2.14.0\n  operators: []\n";
        let set = parse_imageset(text, "isc.yaml").unwrap();
        assert!(set.warnings.is_empty(), "{:?}", set.warnings);
        let refs = set.images;
        assert_eq!(refs.len(), 2);
        assert_eq!(
            refs[1].to_string(),
            "registry.k8s.io/sig-storage/livenessprobe:v2.14.0"
        );
        let cases = [
            (
                "kind: Pod\napiVersion: v1\n",
                "expected ImageSetConfiguration",
            ),
            (
                "kind: ImageSetConfiguration\napiVersion: v1\n",
                "mirror.openshift.io",
            ),
            (
                "kind: ImageSetConfiguration\napiVersion: mirror.openshift.io/v2alpha1\n",
                "lists no images",
            ),
            (
                "kind: ImageSetConfiguration\napiVersion: mirror.openshift.io/v2alpha1\nmirror:\n  additionalImages:\n  - name: 'bad ref'\n",
                "additionalImages[0]",
            ),
            ("[", "isc.yaml"),
            (
                "kind: ImageSetConfiguration\napiVersion: mirror.openshift.io/v2alpha1\nmirror:\n  operators:\n  - catalog: c\n",
                "(mirror.operators not read",
            ),
        ];
        for (text, want) in cases {
            let err = parse_imageset(text, "isc.yaml").unwrap_err().to_string();
            assert!(err.contains(want), "{text:?}: {err}");
        }
    }

    #[test]
    fn imageset_sections_not_read_are_warned_about() {
        let text = "kind: ImageSetConfiguration\napiVersion: mirror.openshift.io/v2alpha1\nmirror:\n  platform:\n    channels:\n    - name: stable-4.18\n  operators:\n  - catalog: registry.redhat.io/redhat/redhat-operator-index:v4.18\n  helm: {}\n  additionalImages:\n  - name: quay.io/org/img:v1\n";
        let set = parse_imageset(text, "isc.yaml").unwrap();
        assert_eq!(set.images.len(), 1);
        assert_eq!(set.warnings.len(), 2, "{:?}", set.warnings);
        assert!(set.warnings[0].starts_with("isc.yaml: mirror.platform is not checked"));
        assert!(set.warnings[1].starts_with("isc.yaml: mirror.operators is not checked"));
    }
}
