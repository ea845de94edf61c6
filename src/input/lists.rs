//! Reference lists: plain files of references (`--from-file`) and oc-mirror
//! ImageSetConfigurations (`--from-imageset`).

use serde::Deserialize;

use super::error::InputError;
use super::file::read_text;
use crate::reference::ImageRef;

fn read_all(path: &str, max_bytes: u64) -> Result<String, InputError> {
    read_text(path, max_bytes).map_err(|e| {
        let error = InputError::new(path, e.reason);
        match e.source {
            Some(cause) => error.caused_by(cause),
            None => error,
        }
    })
}

/// Parses a reference list: one reference per line, `#` starts a comment, blank lines ignored.
pub fn parse_reference_list(text: &str, origin: &str) -> Result<Vec<ImageRef>, InputError> {
    let mut refs = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let r = line
            .parse::<ImageRef>()
            .map_err(|e| InputError::new(format!("{origin}:{}", n + 1), e.to_string()))?;
        refs.push(r);
    }
    Ok(refs)
}

/// Reads a reference list from a file, or standard input for `-`, of at most `max_bytes`.
pub fn read_reference_list(path: &str, max_bytes: u64) -> Result<Vec<ImageRef>, InputError> {
    parse_reference_list(&read_all(path, max_bytes)?, path)
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
pub fn parse_imageset(text: &str, origin: &str) -> Result<ImageSet, InputError> {
    let err = |reason: String| InputError::new(origin, reason);
    crate::yaml::check_nesting(text).map_err(|e| err(e.to_string()))?;
    let mut value: serde_yaml_ng::Value =
        serde_yaml_ng::from_str(text).map_err(|e| err("cannot parse".to_string()).caused_by(e))?;
    crate::yaml::merge_keys(&mut value).map_err(|e| err(e.to_string()))?;
    let config: ImageSetConfiguration = serde_yaml_ng::from_value(value)
        .map_err(|e| err("cannot parse".to_string()).caused_by(e))?;
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
                InputError::new(
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

/// Reads an ImageSetConfiguration file (or standard input for `-`) of at most `max_bytes`.
pub fn read_imageset(path: &str, max_bytes: u64) -> Result<ImageSet, InputError> {
    parse_imageset(&read_all(path, max_bytes)?, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_lists() {
        let text = "# release 4.18\nquay.io/a/b:v1\n\n  oci:fixtures/layouts/good  # local\nquay.io/a/c@sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\n";
        let refs = parse_reference_list(text, "list.txt").unwrap();
        assert_eq!(refs.len(), 3);
        assert_eq!(refs[1].to_string(), "oci:fixtures/layouts/good");
        let err = parse_reference_list("quay.io/a/b:v1\nNOT VALID\n", "list.txt").unwrap_err();
        assert_eq!(err.origin.as_deref(), Some("list.txt:2"));
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

    /// Issue 22, item 9: YAML merge keys in an ImageSetConfiguration are applied.
    #[test]
    fn imageset_merge_keys_are_applied() {
        let text = "kind: ImageSetConfiguration\napiVersion: mirror.openshift.io/v2alpha1\nmirror:\n  additionalImages:\n  - &i {name: quay.io/org/a:v1}\n  - <<: *i\n";
        let set = parse_imageset(text, "isc.yaml").unwrap();
        assert_eq!(set.images.len(), 2);
        assert_eq!(set.images[1].to_string(), "quay.io/org/a:v1");
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
