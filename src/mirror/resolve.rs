//! Where a node pulls a reference from, under a [`MirrorConfig`]: the registry entry with the
//! longest matching prefix (on repository-path boundaries), its mirrors in order, each
//! filtered by whether it serves this kind of pull, then the source unless blocked
//! (containers/image `FindRegistry` and `PullSourcesFromReference`).

use std::fmt;

use super::config::{MirrorConfig, PullFrom, Registry};
use crate::reference::{ImageRef, ReferenceError, RegistryRef};

/// The length of `prefix` matched at the start of `name` (`host/repo…`), on a path boundary,
/// or `None`. A wildcard `*.example.com` matches any subdomain of the host.
pub fn match_prefix(name: &str, prefix: &str) -> Option<usize> {
    let boundary = |rest: &str| rest.is_empty() || rest.starts_with(['/', ':', '@']);
    if let Some(domain) = prefix.strip_prefix('*') {
        // `domain` is `.example.com`: it must sit inside the host part.
        let idx = name.find(domain)?;
        if name[..idx].contains('/') {
            return None;
        }
        let end = idx + domain.len();
        return boundary(&name[end..]).then_some(end);
    }
    let rest = name.strip_prefix(prefix)?;
    boundary(rest).then_some(prefix.len())
}

/// The configured place a reference is pulled from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MirrorLocation {
    /// The mirror repository (no tag or digest).
    pub repository: RegistryRef,
    /// Which pulls it serves.
    pub pull_from: PullFrom,
    /// Where it was configured.
    pub origin: String,
}

impl fmt::Display for MirrorLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}/{}",
            self.repository.registry, self.repository.repository
        )
    }
}

/// How a node pulls one source reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MirrorResolution {
    /// The prefix of the registry entry that applies.
    pub prefix: String,
    /// Where that entry was configured.
    pub origin: String,
    /// The source may not be contacted (`NeverContactSource`, `blocked`).
    pub source_blocked: bool,
    /// Every mirror of the entry, rewritten for this reference, in order.
    pub mirrors: Vec<MirrorLocation>,
}

impl MirrorResolution {
    /// The mirrors a pull by digest (`true`) or by tag (`false`) tries, in order.
    pub fn mirrors_for(&self, by_digest: bool) -> Vec<&MirrorLocation> {
        self.mirrors
            .iter()
            .filter(|m| m.pull_from.serves(by_digest))
            .collect()
    }
}

/// A mirror location that does not make a valid reference once rewritten.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{origin}: mirror '{location}' for '{reference}' gives '{rewritten}', not an image reference"
)]
pub struct ResolveError {
    /// Where the mirror was configured.
    pub origin: String,
    /// The mirror location.
    pub location: String,
    /// The source reference.
    pub reference: String,
    /// The rewritten name.
    pub rewritten: String,
    /// Why it is not an image reference (boxed: errors stay small).
    #[source]
    pub reason: Box<RewriteError>,
}

/// Why a rewritten name is not an image reference.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RewriteError {
    /// It does not parse.
    #[error(transparent)]
    Reference(#[from] ReferenceError),
    /// It parses as an OCI layout.
    #[error("not a registry reference")]
    Layout,
    /// The reference grammar took its first component for a repository, not a host.
    #[error("the mirror location must start with a registry host (host[:port]/path)")]
    NoHost,
}

/// The registry entry whose prefix matches `name` longest (ties: the first by prefix order).
pub fn find_registry<'a>(config: &'a MirrorConfig, name: &str) -> Option<&'a Registry> {
    let mut best: Option<&Registry> = None;
    for r in config.registries() {
        if match_prefix(name, &r.prefix).is_some()
            && best.is_none_or(|b| r.prefix.len() > b.prefix.len())
        {
            best = Some(r);
        }
    }
    best
}

/// Resolves `reference` to its mirrors; `None` when no entry covers it.
pub fn resolve(
    config: &MirrorConfig,
    reference: &RegistryRef,
) -> Result<Option<MirrorResolution>, ResolveError> {
    let name = format!("{}/{}", reference.registry, reference.repository);
    let Some(registry) = find_registry(config, &name) else {
        return Ok(None);
    };
    let Some(matched) = match_prefix(&name, &registry.prefix) else {
        return Ok(None);
    };
    let mut mirrors = Vec::new();
    for m in &registry.mirrors {
        let rewritten = format!("{}{}", m.location, &name[matched..]);
        let fail = |reason: RewriteError| ResolveError {
            origin: m.origin.clone(),
            location: m.location.clone(),
            reference: reference.to_string(),
            rewritten: rewritten.clone(),
            reason: Box::new(reason),
        };
        let parsed = match rewritten.parse::<ImageRef>() {
            Ok(ImageRef::Registry(r)) => r,
            Ok(ImageRef::Layout(_)) => return Err(fail(RewriteError::Layout)),
            Err(e) => return Err(fail(e.into())),
        };
        // The grammar would read "mirror/x" as docker.io/mirror/x: insist the host survives.
        if format!("{}/{}", parsed.registry, parsed.repository) != rewritten {
            return Err(fail(RewriteError::NoHost));
        }
        mirrors.push(MirrorLocation {
            repository: RegistryRef {
                tag: None,
                digest: None,
                ..parsed
            },
            pull_from: m.pull_from,
            origin: m.origin.clone(),
        });
    }
    Ok(Some(MirrorResolution {
        prefix: registry.prefix.clone(),
        origin: registry.origin.clone(),
        source_blocked: registry.blocked,
        mirrors,
    }))
}

crate::error::input_errors!(ResolveError);

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn reg(s: &str) -> RegistryRef {
        match s.parse::<ImageRef>() {
            Ok(ImageRef::Registry(r)) => r,
            other => panic!("{s}: {other:?}"),
        }
    }

    const D: &str = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

    #[test]
    fn prefixes_match_on_path_boundaries() {
        let cases: &[(&str, &str, Option<usize>)] = &[
            ("quay.io/org/img", "quay.io/org", Some(11)),
            ("quay.io/org", "quay.io/org", Some(11)),
            ("quay.io/organisation/img", "quay.io/org", None),
            ("quay.io/org/img", "quay.io", Some(7)),
            ("quay.io/org/img", "quay.io/org/img", Some(15)),
            ("quay.io/org/img2", "quay.io/org/img", None),
            ("quay.io.evil/x", "quay.io", None),
            // containers/image lets a port follow a host prefix (documented quirk).
            ("quay.io:5000/x", "quay.io", Some(7)),
            ("a.example.com/x/y", "*.example.com", Some(13)),
            ("b.a.example.com/x", "*.example.com", Some(15)),
            ("example.com/x", "*.example.com", None),
            ("evil.com/a.example.com/x", "*.example.com", None),
            ("a.example.community/x", "*.example.com", None),
        ];
        for (name, prefix, want) in cases {
            assert_eq!(match_prefix(name, prefix), *want, "{name} vs {prefix}");
        }
    }

    fn idms(yaml: &str) -> MirrorConfig {
        let mut c = MirrorConfig::default();
        c.add_mirror_sets(Path::new("idms.yaml"), yaml).unwrap();
        c
    }

    fn mirrors(c: &MirrorConfig, r: &str, by_digest: bool) -> Vec<String> {
        resolve(c, &reg(r))
            .unwrap()
            .map(|res| {
                res.mirrors_for(by_digest)
                    .iter()
                    .map(|m| m.to_string())
                    .collect()
            })
            .unwrap_or_default()
    }

    const SETS: &str = r#"
apiVersion: config.openshift.io/v1
kind: ImageDigestMirrorSet
metadata: {name: broad}
spec:
  imageDigestMirrors:
  - source: quay.io/org
    mirrors: [mirror.local/org, backup.local:5000/quay/org]
---
apiVersion: config.openshift.io/v1
kind: ImageDigestMirrorSet
metadata: {name: specific}
spec:
  imageDigestMirrors:
  - source: quay.io/org/csi-driver
    mirrors: [special.local/csi]
    mirrorSourcePolicy: NeverContactSource
  - source: "*.example.com"
    mirrors: [wild.local/ex]
---
apiVersion: config.openshift.io/v1
kind: ImageTagMirrorSet
metadata: {name: tags}
spec:
  imageTagMirrors:
  - source: quay.io/org
    mirrors: [tags.local/org]
"#;

    #[test]
    fn most_specific_source_wins_and_mirrors_keep_their_order() {
        let c = idms(SETS);
        // Longest prefix: the repository entry beats the namespace entry.
        assert_eq!(
            mirrors(&c, &format!("quay.io/org/csi-driver@{D}"), true),
            ["special.local/csi"]
        );
        let r = resolve(&c, &reg("quay.io/org/csi-driver:v1"))
            .unwrap()
            .unwrap();
        assert!(r.source_blocked);
        assert_eq!(r.prefix, "quay.io/org/csi-driver");
        // The namespace entry: both IDMS mirrors in order, path rewritten under each.
        assert_eq!(
            mirrors(&c, &format!("quay.io/org/team/img@{D}"), true),
            [
                "mirror.local/org/team/img",
                "backup.local:5000/quay/org/team/img"
            ]
        );
        let broad = resolve(&c, &reg("quay.io/org/img:v1")).unwrap().unwrap();
        assert!(!broad.source_blocked);
        // Digest pulls use IDMS mirrors only; tag pulls the ITMS mirror only.
        assert_eq!(
            mirrors(&c, "quay.io/org/img:v1", false),
            ["tags.local/org/img"]
        );
        // Not a path boundary: not covered.
        assert_eq!(
            resolve(&c, &reg("quay.io/organisation/img:v1")).unwrap(),
            None
        );
        assert_eq!(
            resolve(&c, &reg("docker.io/library/busybox")).unwrap(),
            None
        );
        // Wildcard sources map the path under the mirror.
        assert_eq!(
            mirrors(&c, &format!("reg.example.com/a/b@{D}"), true),
            ["wild.local/ex/a/b"]
        );
    }

    #[test]
    fn icsp_mirrors_are_digest_only() {
        let mut c = MirrorConfig::default();
        c.add_mirror_sets(
            Path::new("icsp.yaml"),
            "apiVersion: operator.openshift.io/v1alpha1\nkind: ImageContentSourcePolicy\n\
             metadata: {name: release}\nspec:\n  repositoryDigestMirrors:\n  \
             - source: registry.redhat.io/ubi9\n    mirrors: [m.local/ubi9]\n",
        )
        .unwrap();
        assert_eq!(
            mirrors(&c, &format!("registry.redhat.io/ubi9@{D}"), true),
            ["m.local/ubi9"]
        );
        assert!(mirrors(&c, "registry.redhat.io/ubi9:latest", false).is_empty());
    }

    #[test]
    fn registries_conf_prefix_location_and_pull_from_mirror() {
        let mut c = MirrorConfig::default();
        c.add_registries_conf(
            Path::new("registries.conf"),
            r#"
unqualified-search-registries = ["registry.access.redhat.com"]

[[registry]]
prefix = "quay.io/org"
location = "quay.io/org"
mirror-by-digest-only = true
[[registry.mirror]]
location = "m1.local/org"
[[registry.mirror]]
location = "m2.local/org"

[[registry]]
location = "quay.io/org/csi"
blocked = true
[[registry.mirror]]
location = "csi.local/a"
pull-from-mirror = "tag-only"
[[registry.mirror]]
location = "csi.local/b"
pull-from-mirror = "all"

[[registry]]
prefix = "quay.io/org"
location = "ignored.local/org"
"#,
        )
        .unwrap();
        assert_eq!(
            mirrors(&c, &format!("quay.io/org/x@{D}"), true),
            ["m1.local/org/x", "m2.local/org/x"]
        );
        assert!(mirrors(&c, "quay.io/org/x:v1", false).is_empty());
        assert_eq!(
            mirrors(&c, "quay.io/org/csi:v1", false),
            ["csi.local/a", "csi.local/b"]
        );
        assert_eq!(
            mirrors(&c, &format!("quay.io/org/csi@{D}"), true),
            ["csi.local/b"]
        );
        assert!(
            resolve(&c, &reg("quay.io/org/csi:v1"))
                .unwrap()
                .unwrap()
                .source_blocked
        );
        // The first entry of a prefix wins within a file.
        let first = find_registry(&c, "quay.io/org/x").unwrap();
        assert_eq!(first.location, "quay.io/org");
    }

    #[test]
    fn a_mirror_without_a_host_is_refused() {
        let mut c = MirrorConfig::default();
        c.add_registries_conf(
            Path::new("r.conf"),
            "[[registry]]\nlocation = \"quay.io/org\"\n[[registry.mirror]]\nlocation = \"mirror\"\n",
        )
        .unwrap();
        let err = resolve(&c, &reg("quay.io/org/img:v1")).unwrap_err();
        assert!(err.to_string().contains("r.conf"), "{err}");
        let cause = std::error::Error::source(&err).expect("the reason is the cause");
        assert!(cause.to_string().contains("registry host"), "{cause}");
    }
}
