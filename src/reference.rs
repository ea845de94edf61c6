//! Image references as users type them.
//!
//! - registry: `host[:port]/path[:tag][@sha256:…]`, optionally prefixed `docker://`, with
//!   Docker Hub normalisation (`busybox` → `docker.io/library/busybox:latest`). The grammar is
//!   docker/distribution's, through `oci_spec::distribution::Reference` (re-exported by
//!   oci-client), which tracks it.
//! - OCI image layout: `oci:DIR[:TAG]` or `oci:DIR@DIGEST`, as skopeo writes and reads them
//!   (the first `:` after `oci:` separates the directory from the tag).

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use crate::digest::Digest;

/// A reference to an image in a registry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegistryRef {
    /// Registry host and optional port, normalised (`docker.io` for Docker Hub).
    pub registry: String,
    /// Repository path (`library/busybox`).
    pub repository: String,
    /// Tag, if any.
    pub tag: Option<String>,
    /// Pinned digest, if any.
    pub digest: Option<Digest>,
}

impl RegistryRef {
    /// The same repository pinned to `digest` (tag dropped).
    pub fn with_digest(&self, digest: &Digest) -> RegistryRef {
        RegistryRef {
            tag: None,
            digest: Some(digest.clone()),
            ..self.clone()
        }
    }

    /// The tag or digest this reference names, as used in `/v2/<repo>/manifests/<it>`.
    pub fn reference_part(&self) -> String {
        match (&self.digest, &self.tag) {
            (Some(d), _) => d.to_string(),
            (None, Some(t)) => t.clone(),
            (None, None) => "latest".to_string(),
        }
    }

    /// The oci-client reference for this image.
    pub fn to_oci(&self) -> oci_client::Reference {
        match &self.digest {
            Some(d) => oci_client::Reference::with_digest(
                self.registry.clone(),
                self.repository.clone(),
                d.to_string(),
            ),
            None => oci_client::Reference::with_tag(
                self.registry.clone(),
                self.repository.clone(),
                self.tag.clone().unwrap_or_else(|| "latest".into()),
            ),
        }
    }

    /// True for hosts where plain HTTP is allowed without asking (loopback).
    pub fn is_loopback(&self) -> bool {
        let host = match self.registry.rsplit_once(':') {
            Some((h, port)) if port.bytes().all(|b| b.is_ascii_digit()) => h,
            _ => self.registry.as_str(),
        };
        matches!(host, "localhost" | "[::1]" | "::1") || host.starts_with("127.")
    }
}

/// Writes `[:TAG][@DIGEST]`, the suffix both reference kinds share.
fn write_suffix(
    f: &mut fmt::Formatter<'_>,
    tag: &Option<String>,
    digest: &Option<Digest>,
) -> fmt::Result {
    if let Some(t) = tag {
        write!(f, ":{t}")?;
    }
    if let Some(d) = digest {
        write!(f, "@{d}")?;
    }
    Ok(())
}

impl fmt::Display for RegistryRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.registry, self.repository)?;
        write_suffix(f, &self.tag, &self.digest)
    }
}

/// A reference to an image in an OCI image layout directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LayoutRef {
    /// The layout directory (holds `oci-layout` and `index.json`).
    pub dir: PathBuf,
    /// The `org.opencontainers.image.ref.name` to pick from `index.json`.
    pub tag: Option<String>,
    /// A digest to pick instead.
    pub digest: Option<Digest>,
}

impl fmt::Display for LayoutRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "oci:{}", self.dir.display())?;
        write_suffix(f, &self.tag, &self.digest)
    }
}

/// Any reference imgcheck accepts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ImageRef {
    /// An image in a registry.
    Registry(RegistryRef),
    /// An image in an OCI layout directory.
    Layout(LayoutRef),
}

impl ImageRef {
    /// The pinned digest, if the reference has one.
    pub fn digest(&self) -> Option<&Digest> {
        match self {
            ImageRef::Registry(r) => r.digest.as_ref(),
            ImageRef::Layout(l) => l.digest.as_ref(),
        }
    }
}

impl fmt::Display for ImageRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ImageRef::Registry(r) => r.fmt(f),
            ImageRef::Layout(l) => l.fmt(f),
        }
    }
}

/// A reference that does not parse, with the input and the reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid reference '{input}': {reason}")]
pub struct ReferenceError {
    /// What the user typed.
    pub input: String,
    /// Why it is not a reference.
    pub reason: String,
}

impl FromStr for ImageRef {
    type Err = ReferenceError;

    fn from_str(input: &str) -> Result<Self, Self::Err> {
        let err = |reason: String| ReferenceError {
            input: input.to_string(),
            reason,
        };
        if let Some(rest) = input.strip_prefix("oci:") {
            return parse_layout(rest).map(ImageRef::Layout).map_err(err);
        }
        let rest = input.strip_prefix("docker://").unwrap_or(input);
        if let Some((transport, _)) = rest.split_once(':')
            && [
                "dir",
                "docker-archive",
                "oci-archive",
                "containers-storage",
                "docker-daemon",
            ]
            .contains(&transport)
        {
            return Err(err(format!(
                "the '{transport}:' transport is not supported (use a registry reference or oci:DIR[:TAG])"
            )));
        }
        if rest.is_empty() {
            return Err(err("empty reference".to_string()));
        }
        if rest.len() > 4096 {
            return Err(err("longer than 4096 characters".to_string()));
        }
        let parsed: oci_client::Reference = rest.parse().map_err(|e: oci_client::ParseError| {
            err(format!(
                "{e} (expected HOST[:PORT]/PATH[:TAG][@sha256:DIGEST])"
            ))
        })?;
        if let Some(bad) = parsed
            .repository()
            .split('/')
            .find(|c| !valid_path_component(c))
        {
            return Err(err(format!(
                "repository path component '{bad}' must be lowercase letters and digits, \
                 separated by '.', '_', '__' or '-'"
            )));
        }
        let digest = parsed
            .digest()
            .map(|d| d.parse::<Digest>())
            .transpose()
            .map_err(|e| err(e.to_string()))?;
        Ok(ImageRef::Registry(RegistryRef {
            registry: parsed.registry().to_string(),
            repository: parsed.repository().to_string(),
            tag: parsed.tag().map(str::to_string),
            digest,
        }))
    }
}

/// docker/distribution's path-component grammar:
/// `[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*`.
pub(crate) fn valid_path_component(c: &str) -> bool {
    let b = c.as_bytes();
    let alnum = |x: u8| x.is_ascii_lowercase() || x.is_ascii_digit();
    if b.is_empty() || !alnum(b[0]) || !alnum(b[b.len() - 1]) {
        return false;
    }
    let mut i = 0;
    while i < b.len() {
        if alnum(b[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && !alnum(b[i]) {
            i += 1;
        }
        let sep = &c[start..i];
        if !(sep == "." || sep == "_" || sep == "__" || sep.bytes().all(|x| x == b'-')) {
            return false;
        }
    }
    true
}

fn parse_layout(rest: &str) -> Result<LayoutRef, String> {
    if let Some((dir, digest)) = rest.rsplit_once('@') {
        let digest: Digest = digest
            .parse()
            .map_err(|e: crate::digest::DigestError| e.to_string())?;
        if dir.is_empty() {
            return Err("oci: needs a directory, e.g. oci:fixtures/layouts/good".to_string());
        }
        return Ok(LayoutRef {
            dir: PathBuf::from(dir),
            tag: None,
            digest: Some(digest),
        });
    }
    let (dir, tag) = match rest.split_once(':') {
        Some((dir, tag)) => (dir, Some(tag)),
        None => (rest, None),
    };
    if dir.is_empty() {
        return Err("oci: needs a directory, e.g. oci:fixtures/layouts/good".to_string());
    }
    if let Some(tag) = tag {
        let ok = !tag.is_empty()
            && tag.len() <= 128
            && tag
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b));
        if !ok {
            return Err(format!(
                "'{tag}' is not a valid tag (letters, digits, '.', '_', '-'; at most 128)"
            ));
        }
    }
    Ok(LayoutRef {
        dir: PathBuf::from(dir),
        tag: tag.map(str::to_string),
        digest: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const D: &str = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

    fn reg(s: &str) -> RegistryRef {
        match s.parse::<ImageRef>().unwrap() {
            ImageRef::Registry(r) => r,
            other => panic!("{s}: {other:?}"),
        }
    }

    #[test]
    fn registry_references() {
        let cases: &[(&str, &str, &str, Option<&str>, bool)] = &[
            (
                "busybox",
                "docker.io",
                "library/busybox",
                Some("latest"),
                false,
            ),
            (
                "docker://busybox:1.36",
                "docker.io",
                "library/busybox",
                Some("1.36"),
                false,
            ),
            (
                "quay.io/org/img:v4.18",
                "quay.io",
                "org/img",
                Some("v4.18"),
                false,
            ),
            (
                "127.0.0.1:5000/a/b/c:t",
                "127.0.0.1:5000",
                "a/b/c",
                Some("t"),
                false,
            ),
            (
                "localhost:5000/img",
                "localhost:5000",
                "img",
                Some("latest"),
                false,
            ),
        ];
        for (input, registry, repo, tag, has_digest) in cases {
            let r = reg(input);
            assert_eq!(r.registry, *registry, "{input}");
            assert_eq!(r.repository, *repo, "{input}");
            assert_eq!(r.tag.as_deref(), *tag, "{input}");
            assert_eq!(r.digest.is_some(), *has_digest, "{input}");
        }
        let pinned = reg(&format!("quay.io/org/img@{D}"));
        assert_eq!(pinned.digest.as_ref().unwrap().to_string(), D);
        assert_eq!(pinned.tag, None);
        assert_eq!(pinned.reference_part(), D);
        let both = reg(&format!("quay.io/org/img:v1@{D}"));
        assert_eq!(both.tag.as_deref(), Some("v1"));
        assert_eq!(both.to_string(), format!("quay.io/org/img:v1@{D}"));
        assert!(reg("127.0.0.1:5000/x").is_loopback());
        assert!(reg("localhost/x").is_loopback());
        assert!(!reg("quay.io/x").is_loopback());
    }

    #[test]
    fn layout_references() {
        let l = |s: &str| match s.parse::<ImageRef>().unwrap() {
            ImageRef::Layout(l) => l,
            other => panic!("{s}: {other:?}"),
        };
        let a = l("oci:fixtures/layouts/good");
        assert_eq!(a.dir, PathBuf::from("fixtures/layouts/good"));
        assert_eq!(a.tag, None);
        let b = l("oci:/tmp/x:latest");
        assert_eq!(b.tag.as_deref(), Some("latest"));
        let c = l(&format!("oci:/tmp/x@{D}"));
        assert_eq!(c.digest.unwrap().to_string(), D);
    }

    #[test]
    fn bad_references_name_the_input() {
        for bad in [
            "",
            "docker://",
            "UPPER/case",
            "quay.io/org/img@sha256:abc",
            "quay.io/org/img:bad tag",
            "oci:",
            "oci::tag",
            "oci:dir:bad/tag",
            "oci:dir@sha256:short",
            "dir:/tmp/x",
            "quay.io//img",
        ] {
            let err = bad.parse::<ImageRef>().unwrap_err();
            assert_eq!(err.input, bad);
            assert!(err.to_string().contains(bad), "{err}");
        }
    }

    proptest! {
        #[test]
        fn parse_never_panics(s in "\\PC{0,80}") {
            let _ = s.parse::<ImageRef>();
        }

        #[test]
        fn display_roundtrips(repo in "[a-z0-9]{1,10}(/[a-z0-9]{1,10}){0,2}", tag in "[A-Za-z0-9_][A-Za-z0-9_.-]{0,20}") {
            let input = format!("registry.example:5000/{repo}:{tag}");
            let r = reg(&input);
            prop_assert_eq!(r.to_string(), input);
        }
    }
}
