//! What to assemble, as the user gives it: the children (`CHILD_REF[=os.version=VERSION]`),
//! the `--target` tag, the `--annotation`s, and the [`Request`] they make.

use std::collections::BTreeMap;

use super::failure::{AssembleRefusal, refuse};
use super::index::IndexFormat;
use crate::platform::WindowsVersion;
use crate::policy::Policy;
use crate::reference::{ImageRef, RegistryRef};

/// A `CHILD_REF[=os.version=VERSION]` argument, split.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChildSpec {
    /// The argument as typed, for messages.
    pub input: String,
    /// The child reference.
    pub reference: ImageRef,
    /// An os.version to write for a Windows child whose config has none.
    pub os_version: Option<String>,
}

/// The suffix that gives a child's os.version.
const OS_VERSION_SUFFIX: &str = "=os.version=";

impl ChildSpec {
    /// Parses `CHILD_REF` or `CHILD_REF=os.version=10.0.20348.2227`.
    pub fn parse(input: &str) -> Result<ChildSpec, AssembleRefusal> {
        let (reference, os_version) = match input.rsplit_once(OS_VERSION_SUFFIX) {
            Some((r, v)) => {
                if WindowsVersion::parse(v).is_none() {
                    return refuse(format!(
                        "child '{input}': os.version '{v}' is not MAJOR.MINOR.BUILD[.REVISION], \
                         e.g. 10.0.20348.2227"
                    ));
                }
                (r, Some(v.to_string()))
            }
            None => (input, None),
        };
        let reference =
            reference
                .parse::<ImageRef>()
                .map_err(|source| AssembleRefusal::ChildReference {
                    input: input.to_string(),
                    source,
                })?;
        Ok(ChildSpec {
            input: input.to_string(),
            reference,
            os_version,
        })
    }
}

/// Checks the `--target`: a registry reference naming a tag, not a digest.
pub fn target_ref(input: &str) -> Result<RegistryRef, AssembleRefusal> {
    match input.parse::<ImageRef>() {
        Err(e) => Err(AssembleRefusal::TargetReference(e)),
        Ok(ImageRef::Layout(_)) => refuse(format!(
            "--target '{input}': assemble pushes to a registry; give REGISTRY/REPO:TAG"
        )),
        Ok(ImageRef::Registry(r)) if r.digest.is_some() => refuse(format!(
            "--target '{input}' is a digest reference: the list's digest is computed from its \
             content, so the target must name a tag (REGISTRY/REPO:TAG)"
        )),
        Ok(ImageRef::Registry(r)) => Ok(r),
    }
}

/// Parses `--annotation KEY=VALUE` arguments; a key given twice with different values is refused.
pub fn parse_annotations(inputs: &[String]) -> Result<BTreeMap<String, String>, AssembleRefusal> {
    let mut out = BTreeMap::new();
    for input in inputs {
        let Some((key, value)) = input.split_once('=') else {
            return refuse(format!("--annotation '{input}': expected KEY=VALUE"));
        };
        if key.is_empty() {
            return refuse(format!("--annotation '{input}': the key is empty"));
        }
        if let Some(old) = out.insert(key.to_string(), value.to_string())
            && old != value
        {
            return refuse(format!(
                "--annotation '{key}' is given twice, with '{old}' and '{value}'"
            ));
        }
    }
    Ok(out)
}

/// What to assemble.
#[derive(Debug, Clone)]
pub struct Request {
    /// Where the list goes (a tag; never a digest).
    pub target: RegistryRef,
    /// The children, as given.
    pub children: Vec<ChildSpec>,
    /// The list format; `None` picks from the children (see [`super::build_index`]).
    pub format: Option<IndexFormat>,
    /// Index annotations.
    pub annotations: BTreeMap<String, String>,
    /// Build and print only; write nothing.
    pub dry_run: bool,
    /// The policy the list must pass (read back by digest) before the tag moves to it.
    pub policy: Policy,
    /// Move the tag even when the list fails the policy or cannot be fully verified.
    pub force: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::one_line;

    #[test]
    fn parses_arguments() {
        let spec = ChildSpec::parse("quay.io/a/b@sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855=os.version=10.0.20348.2227").unwrap();
        assert_eq!(spec.os_version.as_deref(), Some("10.0.20348.2227"));
        assert!(matches!(spec.reference, ImageRef::Registry(_)));
        let spec = ChildSpec::parse("oci:/tmp/x:tag").unwrap();
        assert_eq!(spec.os_version, None);
        for (bad, want) in [
            ("quay.io/a/b:t=os.version=20348", "is not MAJOR.MINOR.BUILD"),
            ("quay.io/a/b:t=os.version=", "is not MAJOR.MINOR.BUILD"),
            ("=os.version=10.0.1.1", "child '=os.version=10.0.1.1'"),
            ("Bad/Ref", "child 'Bad/Ref'"),
        ] {
            let err = ChildSpec::parse(bad).unwrap_err();
            assert!(one_line(&err).contains(want), "{bad}: {err}");
        }
        assert!(target_ref("127.0.0.1:5000/app:v1").is_ok());
        for (bad, want) in [
            (
                "127.0.0.1:5000/app@sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
                "is a digest reference",
            ),
            (
                "127.0.0.1:5000/app:v1@sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
                "is a digest reference",
            ),
            ("oci:/tmp/x:latest", "pushes to a registry"),
            ("UPPER/x", "--target: invalid reference"),
        ] {
            let err = target_ref(bad).unwrap_err();
            assert!(one_line(&err).contains(want), "{bad}: {err}");
        }
        let ann = parse_annotations(&["a=b=c".into(), "x=".into(), "a=b=c".into()]).unwrap();
        assert_eq!(ann["a"], "b=c");
        assert_eq!(ann["x"], "");
        for (bad, want) in [
            (vec!["novalue"], "expected KEY=VALUE"),
            (vec!["=v"], "key is empty"),
            (vec!["k=1", "k=2"], "given twice"),
        ] {
            let inputs: Vec<String> = bad.iter().map(|s| s.to_string()).collect();
            let err = parse_annotations(&inputs).unwrap_err();
            assert!(one_line(&err).contains(want), "{bad:?}: {err}");
        }
    }
}
