//! Image references as users type them.
//!
//! - registry: `host[:port]/path[:tag][@sha256:…]`, optionally prefixed `docker://`, with
//!   Docker Hub normalisation (`busybox` → `docker.io/library/busybox:latest`). The grammar is
//!   docker/distribution's, parsed by hand (see `parse_registry` for why) and tested against
//!   `oci_spec::distribution::Reference`.
//! - OCI image layout: `oci:DIR[:TAG]` or `oci:DIR@DIGEST`, as skopeo writes and reads them
//!   (the first `:` after `oci:` separates the directory from the tag).

use std::fmt;
use std::path::{Path, PathBuf};
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

    /// Parses a pull spec as Kubernetes and OpenShift write one (a pod's `image`, a release
    /// component's `from.name`): docker/distribution's grammar with Docker Hub normalisation,
    /// and nothing else: no transport (`docker://`, `oci:`) and no look at local directories,
    /// which [`ImageRef`]'s parser, made for what users type, allows.
    pub fn parse_pull_spec(input: &str) -> Result<RegistryRef, ReferenceError> {
        let err = |reason: String| ReferenceError {
            input: input.to_string(),
            reason,
        };
        if input.is_empty() {
            return Err(err("empty reference".to_string()));
        }
        if input.len() > 4096 {
            return Err(err("longer than 4096 characters".to_string()));
        }
        parse_registry(input).map_err(err)
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
        if rest.len() == input.len()
            && let Some(dir) = local_layout(input)
        {
            return Err(err(format!(
                "'{dir}' is a local OCI image layout: did you mean oci:{input}?"
            )));
        }
        if rest.len() > 4096 {
            return Err(err("longer than 4096 characters".to_string()));
        }
        parse_registry(rest).map(ImageRef::Registry).map_err(err)
    }
}

/// The directory `input` names (whole, or before a last `:TAG` / `@DIGEST`) when it is a local
/// OCI image layout (holds an `oci-layout` file): a layout path typed without `oci:`, which
/// would otherwise go to Docker Hub.
fn local_layout(input: &str) -> Option<&str> {
    let is_layout = |dir: &str| Path::new(dir).join("oci-layout").is_file();
    let before = |c: char| input.rsplit_once(c).map(|(d, _)| d);
    [Some(input), before('@'), before(':')]
        .into_iter()
        .flatten()
        .find(|d| !d.is_empty() && is_layout(d))
}

/// Parses `[HOST[:PORT]/]PATH[:TAG][@DIGEST]` with docker/distribution's grammar and its
/// Docker Hub normalisation (`busybox` → `docker.io/library/busybox:latest`), plus bracketed
/// IPv6 hosts (`[::1]:5000/x`) as distribution accepts them.
///
/// Hand-written rather than oci-spec's `Reference` parser: that one compiles a Unicode regex
/// on first use, which was 91% of the instructions of a whole single-reference `verify`
/// (docs/decisions.md). A differential test keeps the two in agreement.
fn parse_registry(rest: &str) -> Result<RegistryRef, String> {
    const SHAPE: &str = "(expected HOST[:PORT]/PATH[:TAG][@sha256:DIGEST])";
    let (name_tag, digest) = match rest.split_once('@') {
        Some((n, d)) => (n, Some(d.parse::<Digest>().map_err(|e| e.to_string())?)),
        None => (rest, None),
    };
    let last_slash = name_tag.rfind('/').map_or(0, |i| i + 1);
    let (name, tag) = match name_tag[last_slash..].split_once(':') {
        Some((_, tag)) => (&name_tag[..name_tag.len() - tag.len() - 1], Some(tag)),
        None => (name_tag, None),
    };
    if let Some(tag) = tag
        && !valid_tag(tag)
    {
        return Err(format!(
            "'{tag}' is not a valid tag (letters, digits, '_', then also '.', '-'; at most 128) {SHAPE}"
        ));
    }
    let (domain, path) = match name.split_once('/') {
        Some((first, path))
            if first.contains(['.', ':']) || first == "localhost" || first.starts_with('[') =>
        {
            if !valid_domain(first) {
                return Err(format!("'{first}' is not a valid registry host {SHAPE}"));
            }
            (first, path)
        }
        _ => ("docker.io", name),
    };
    if path.is_empty() {
        return Err(format!("no repository path {SHAPE}"));
    }
    if let Some(bad) = path.split('/').find(|c| !valid_path_component(c)) {
        return Err(format!(
            "repository path component '{bad}' must be lowercase letters and digits, \
             separated by '.', '_', '__' or '-'"
        ));
    }
    let domain = match domain {
        "index.docker.io" => "docker.io",
        d => d,
    };
    let repository = if domain == "docker.io" && !path.contains('/') {
        format!("library/{path}")
    } else {
        path.to_string()
    };
    if repository.len() > 255 {
        return Err("the repository path is longer than 255 characters".to_string());
    }
    let tag = match (tag, &digest) {
        (None, None) => Some("latest".to_string()),
        (t, _) => t.map(str::to_string),
    };
    Ok(RegistryRef {
        registry: domain.to_string(),
        repository,
        tag,
        digest,
    })
}

/// distribution's tag grammar: `[\w][\w.-]{0,127}`.
fn valid_tag(tag: &str) -> bool {
    let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    match tag.as_bytes() {
        [first, rest @ ..] => {
            word(*first)
                && rest.len() <= 127
                && rest.iter().all(|&b| word(b) || b == b'.' || b == b'-')
        }
        [] => false,
    }
}

/// distribution's domain grammar: dot-separated labels of letters, digits and inner '-'
/// (or a bracketed IPv6 address), then an optional `:PORT`.
fn valid_domain(domain: &str) -> bool {
    let (host, port) = if let Some(v6) = domain.strip_prefix('[') {
        let Some((addr, after)) = v6.split_once(']') else {
            return false;
        };
        if addr.is_empty() || !addr.bytes().all(|b| b.is_ascii_hexdigit() || b == b':') {
            return false;
        }
        match after {
            "" => return true,
            p => match p.strip_prefix(':') {
                Some(port) => ("", Some(port)),
                None => return false,
            },
        }
    } else {
        match domain.split_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (domain, None),
        }
    };
    let label = |l: &str| {
        let b = l.as_bytes();
        !b.is_empty()
            && b[0].is_ascii_alphanumeric()
            && b[b.len() - 1].is_ascii_alphanumeric()
            && b.iter().all(|&x| x.is_ascii_alphanumeric() || x == b'-')
    };
    let host_ok = domain.starts_with('[') || host.split('.').all(label);
    let port_ok = port.is_none_or(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    host_ok && port_ok
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

crate::error::input_errors!(ReferenceError);

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

    #[test]
    fn layout_paths_without_oci_are_refused_with_a_hint() {
        let dir = tempfile::tempdir().unwrap();
        let layout = dir.path().join("good");
        std::fs::create_dir(&layout).unwrap();
        std::fs::write(
            layout.join("oci-layout"),
            r#"{"imageLayoutVersion":"1.0.0"}"#,
        )
        .unwrap();
        let path = layout.display().to_string();
        for input in [path.clone(), format!("{path}:v1"), format!("{path}@{D}")] {
            let e = input.parse::<ImageRef>().unwrap_err();
            assert!(
                e.reason.contains(&format!("did you mean oci:{input}?")),
                "{input}: {e}"
            );
        }
        // With oci: it is a layout; a directory without oci-layout is not one.
        assert!(matches!(
            format!("oci:{path}").parse(),
            Ok(ImageRef::Layout(_))
        ));
        let plain = dir.path().join("plain");
        std::fs::create_dir(&plain).unwrap();
        let e = plain.display().to_string().parse::<ImageRef>().unwrap_err();
        assert!(!e.reason.contains("did you mean"), "{e}");
        // Docker Hub short names stay references when no such directory exists.
        assert_eq!(reg("imgcheck-no-such-dir/busybox").registry, "docker.io");
    }

    #[test]
    fn ipv6_and_hub_normalisation() {
        let v6 = reg("[::1]:5000/team/img:v1");
        assert_eq!(v6.registry, "[::1]:5000");
        assert_eq!(v6.repository, "team/img");
        assert!(v6.is_loopback());
        assert_eq!(reg("[fe80::1]/x").registry, "[fe80::1]");
        let hub = reg("index.docker.io/busybox");
        assert_eq!(
            (hub.registry.as_str(), hub.repository.as_str()),
            ("docker.io", "library/busybox")
        );
        assert_eq!(reg("docker.io/org/img").repository, "org/img");
        for bad in [
            "[::1/x",
            "[zz::1]:5000/x",
            "[::1]x/y",
            "[]/x",
            "host:port/x",
            "-a.io/x",
            "a.io:/x",
        ] {
            assert!(bad.parse::<ImageRef>().is_err(), "{bad} parsed");
        }
    }

    /// Inputs shaped like references, often slightly wrong: hosts, path components, tags and
    /// digests drawn from small alphabets that hit every branch of the grammar.
    fn reference_like() -> impl Strategy<Value = String> {
        let domain = prop_oneof![
            Just(String::new()),
            Just("index.docker.io/".to_string()),
            Just("docker.io/".to_string()),
            "(localhost|[a-zA-Z0-9_-]{1,4}(\\.[a-zA-Z0-9_-]{1,4}){0,2})(:[0-9]{0,4})?/",
        ];
        let component = prop_oneof![3 => "[a-z0-9]{1,4}", 1 => "[a-zA-Z0-9._-]{0,5}"];
        let path = proptest::collection::vec(component, 1..4);
        let tag = proptest::option::of(prop_oneof![
            "[a-zA-Z0-9_.-]{0,6}",
            "[a-zA-Z0-9_][a-zA-Z0-9_.-]{126,128}",
        ]);
        let digest = proptest::option::of(prop_oneof![
            Just(D.to_string()),
            "sha(256|512|384):[0-9a-fA-F]{0,4}",
        ]);
        (domain, path, tag, digest).prop_map(|(d, p, t, g)| {
            let mut s = d + &p.join("/");
            if let Some(t) = t {
                s = s + ":" + &t;
            }
            if let Some(g) = g {
                s = s + "@" + &g;
            }
            s
        })
    }

    proptest! {
        /// Our parser agrees with oci-spec's regex-based one wherever both accept, and
        /// accepts whatever oci-spec accepts except what we refuse on purpose: upper-case or
        /// ill-separated path components, hosts that are no host name (oci-spec takes
        /// `0_0.a/x` as registry `0_0.a`: its regex reads it as a path, then the domain split
        /// sees a '.') and digest algorithms other than sha256/sha512.
        #[test]
        fn agrees_with_oci_spec(s in reference_like()) {
            let ours = s.parse::<ImageRef>();
            let theirs = s.parse::<oci_spec::distribution::Reference>();
            match (&ours, &theirs) {
                (Ok(ImageRef::Registry(o)), Ok(t)) => {
                    prop_assert_eq!(&o.registry, t.registry());
                    prop_assert_eq!(&o.repository, t.repository());
                    prop_assert_eq!(o.tag.as_deref(), t.tag());
                    prop_assert_eq!(o.digest.as_ref().map(|d| d.to_string()), t.digest().map(str::to_string));
                }
                (Ok(o), Err(e)) => prop_assert!(false, "{s}: we accept {o:?}, oci-spec refuses: {e}"),
                (Err(_), Ok(t)) => {
                    let on_purpose = !t.repository().split('/').all(valid_path_component)
                        || !valid_domain(t.registry())
                        || t.digest().is_some_and(|d| d.parse::<Digest>().is_err());
                    prop_assert!(on_purpose, "{s}: oci-spec accepts {t:?}, we refuse: {ours:?}");
                }
                (Ok(ImageRef::Layout(_)), _) | (Err(_), Err(_)) => {}
            }
        }

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
