//! The walk: fetch the top object, then every child concurrently (bounded), checking each
//! object's bytes against the digest and size that named it.

use futures::StreamExt;
use futures::future::BoxFuture;

use super::layer::program;
use super::model::{Content, Graph, Image, Layer, Node, Problem};
use crate::digest::Digest;
use crate::manifest::{
    Descriptor, ImageConfig, ImageManifest, MAX_CONFIG_BYTES, MAX_MANIFEST_BYTES, Manifest,
};
use crate::source::{FetchError, Source};

/// How deep nested indexes may go before the walk refuses them.
pub const MAX_DEPTH: usize = 4;
/// Largest layer fetched whole or spooled to a file (`push`); `--deep` streams layers up to
/// [`MAX_DEEP_LAYER_BYTES`](super::layer::fetch::MAX_DEEP_LAYER_BYTES).
pub const MAX_LAYER_BYTES: u64 = 2 * 1024 * 1024 * 1024;

/// Options for the walk.
#[derive(Debug, Clone, Copy)]
pub struct WalkOptions {
    /// Fetches in flight at once.
    pub jobs: usize,
    /// Also read Windows image layers to check their format and the program the entry runs.
    pub deep: bool,
    /// With `deep`, read the layers of Linux images too (the policy's `deep.linux`, true
    /// unless it says false; the library's default leaves them out).
    pub deep_linux: bool,
}

impl Default for WalkOptions {
    fn default() -> Self {
        WalkOptions {
            jobs: 8,
            deep: false,
            deep_linux: false,
        }
    }
}

/// Checks `bytes` against the digest and (when known) size that named them.
pub(crate) fn verify(bytes: &[u8], digest: &Digest, size: Option<u64>) -> Result<(), Problem> {
    check_size(bytes, digest, size)?;
    if !digest.matches(bytes) {
        return Err(Problem::DigestMismatch(format!(
            "{digest}: received content hashes to {}",
            Digest::compute(digest.algorithm(), bytes)
        )));
    }
    Ok(())
}

/// [`verify`] for bytes `source` served for `digest`: a source that checks digests as it
/// reads ([`Source::checks_digests`]) has hashed them already, so only the size is checked.
fn verify_from<S: Source>(
    source: &S,
    bytes: &[u8],
    digest: &Digest,
    size: Option<u64>,
) -> Result<(), Problem> {
    if source.checks_digests() {
        check_size(bytes, digest, size)
    } else {
        verify(bytes, digest, size)
    }
}

/// The size that named `bytes` (when known) must be theirs.
fn check_size(bytes: &[u8], digest: &Digest, size: Option<u64>) -> Result<(), Problem> {
    if let Some(size) = size
        && size != bytes.len() as u64
    {
        return Err(Problem::DigestMismatch(format!(
            "{digest}: descriptor says {size} bytes, received {}",
            bytes.len()
        )));
    }
    Ok(())
}

/// Walks the graph of one reference. Fails only when the top object cannot be fetched at all
/// (the caller turns that into an `error` verdict or a bad-input exit).
pub async fn walk<S: Source>(source: &S, options: WalkOptions) -> Result<Graph, FetchError> {
    let top = match (source.top().await, source.pinned()) {
        (Ok(top), _) => top,
        // A pinned reference whose bytes do not match is a finding, not a failure to check.
        (Err(e @ FetchError::DigestMismatch { .. }), Some(pinned)) => {
            return Ok(Graph {
                reference: source.name(),
                root: Node {
                    digest: pinned,
                    media_type: String::new(),
                    content: Content::Problem(Problem::DigestMismatch(e.to_string())),
                    served: None,
                },
            });
        }
        (Err(e), _) => return Err(e),
    };
    // A reference by tag names no digest: the top object's is what its bytes hash to, so
    // only its size (when claimed) is left to check.
    let (digest, checked) = match &top.claimed_digest {
        Some(d) => (d.clone(), verify(&top.bytes, d, top.claimed_size)),
        None => {
            let d = Digest::sha256(&top.bytes);
            let checked = check_size(&top.bytes, &d, top.claimed_size);
            (d, checked)
        }
    };
    let media_type = top.media_type.clone().unwrap_or_default();
    let content = match checked {
        Err(p) => Content::Problem(p),
        Ok(()) => {
            parse_and_descend(source, options, &top.bytes, top.media_type.as_deref(), 0).await
        }
    };
    Ok(Graph {
        reference: source.name(),
        root: Node {
            digest,
            media_type,
            content,
            served: None,
        },
    })
}

fn walk_child<'a, S: Source>(
    source: &'a S,
    options: WalkOptions,
    descriptor: &'a Descriptor,
    depth: usize,
) -> BoxFuture<'a, Node> {
    Box::pin(async move {
        let digest = match descriptor.digest() {
            Ok(d) => d,
            Err(e) => unreachable!("digests are validated at parse time: {e}"),
        };
        let size = u64::try_from(descriptor.size).ok();
        let (content, served) = if depth > MAX_DEPTH {
            let nested = format!("indexes nested more than {MAX_DEPTH} deep");
            (Content::Problem(Problem::Bad(nested)), None)
        } else {
            match source.manifest(&digest, MAX_MANIFEST_BYTES).await {
                Err(e) => (Content::Problem(Problem::from_fetch(e)), None),
                Ok(bytes) => match verify_from(source, &bytes, &digest, size) {
                    Err(p) => (Content::Problem(p), None),
                    Ok(()) => read_child(source, options, &bytes, &digest, descriptor, depth).await,
                },
            }
        };
        Node {
            digest,
            media_type: descriptor.media_type.clone(),
            content,
            served,
        }
    })
}

/// A child's content as its descriptor's media type reads it and, when that claim is what
/// makes it unusable, the child read by its body's own type ([`Node::served`]).
async fn read_child<S: Source>(
    source: &S,
    options: WalkOptions,
    bytes: &[u8],
    digest: &Digest,
    descriptor: &Descriptor,
    depth: usize,
) -> (Content, Option<Box<Node>>) {
    let claimed = Some(descriptor.media_type.as_str());
    let content = parse_and_descend(source, options, bytes, claimed, depth).await;
    if !matches!(content, Content::Problem(_)) || descriptor.media_type.is_empty() {
        return (content, None);
    }
    // Unusable by the claim alone when the body reads well by its own type.
    let own_type = match Manifest::parse(bytes, None) {
        Ok(Manifest::Index(index)) => index.media_type,
        Ok(Manifest::Image(image)) => image.media_type,
        Ok(Manifest::Schema1) | Err(_) => return (content, None),
    };
    let served = Node {
        digest: digest.clone(),
        media_type: own_type.unwrap_or_default(),
        content: parse_and_descend(source, options, bytes, None, depth).await,
        served: None,
    };
    (content, Some(Box::new(served)))
}

async fn parse_and_descend<S: Source>(
    source: &S,
    options: WalkOptions,
    bytes: &[u8],
    claimed_type: Option<&str>,
    depth: usize,
) -> Content {
    match Manifest::parse(bytes, claimed_type) {
        Err(e) => Content::Problem(Problem::Bad(e.with_causes())),
        Ok(Manifest::Schema1) => Content::Schema1,
        Ok(Manifest::Image(manifest)) => {
            Content::Image(Box::new(load_image(source, options, manifest).await))
        }
        Ok(Manifest::Index(index)) => {
            let pending: Vec<BoxFuture<'_, Option<Node>>> = index
                .manifests
                .iter()
                .map(|d| -> BoxFuture<'_, Option<Node>> {
                    if d.never_selected() {
                        Box::pin(futures::future::ready(None))
                    } else {
                        Box::pin(
                            async move { Some(walk_child(source, options, d, depth + 1).await) },
                        )
                    }
                })
                .collect();
            let children = futures::stream::iter(pending)
                .buffered(options.jobs.max(1))
                .collect::<Vec<_>>()
                .await;
            Content::Index { index, children }
        }
    }
}

async fn load_image<S: Source>(source: &S, options: WalkOptions, manifest: ImageManifest) -> Image {
    let config = async {
        let d = manifest
            .config
            .digest()
            .map_err(|e| Problem::Bad(e.with_causes()))?;
        let bytes = source
            .blob(&d, MAX_CONFIG_BYTES)
            .await
            .map_err(Problem::from_fetch)?;
        verify_from(source, &bytes, &d, u64::try_from(manifest.config.size).ok())?;
        ImageConfig::parse(&bytes)
            .map_err(|e| Problem::Bad(format!("config {d}: {}", e.with_causes())))
    }
    .await;
    let deep_os = match &config {
        Ok(c) if options.deep && c.os.eq_ignore_ascii_case("windows") => Some(c),
        Ok(c) if options.deep_linux && c.os.eq_ignore_ascii_case("linux") => Some(c),
        _ => None,
    };
    let Some(deep) = deep_os else {
        let layers = manifest
            .layers
            .iter()
            .map(|d| Layer {
                descriptor: d.clone(),
                format: None,
            })
            .collect();
        return Image {
            manifest,
            config,
            layers,
            entry: None,
        };
    };
    // Boxed: only `--deep` reads layers, and every child's future would otherwise carry the
    // room for it.
    let read = Box::pin(program::read_image(
        source,
        &manifest.layers,
        &deep.os,
        &deep.run,
        options.jobs,
    ))
    .await;
    let layers = manifest
        .layers
        .iter()
        .zip(read.formats)
        .map(|(d, format)| Layer {
            descriptor: d.clone(),
            format,
        })
        .collect();
    Image {
        manifest,
        config,
        layers,
        entry: Some(read.entry),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A graph problem made from a fetch error holds the error's causes.
    #[test]
    fn problems_hold_the_fetch_errors_causes() {
        let io = |k| std::io::Error::from(k);
        let refused = io(std::io::ErrorKind::ConnectionRefused);
        let p = Problem::from_fetch(FetchError::unavailable_by("blob sha256:a", refused));
        assert!(
            matches!(&p, Problem::Unavailable(m) if m == "blob sha256:a: connection refused"),
            "{p:?}"
        );
        let denied = io(std::io::ErrorKind::PermissionDenied);
        let p = Problem::from_fetch(FetchError::bad_input_by(
            "blob sha256:a: cannot read",
            denied,
        ));
        assert!(
            matches!(&p, Problem::Bad(m) if m == "blob sha256:a: cannot read: permission denied"),
            "{p:?}"
        );
    }

    #[test]
    fn verify_checks_size_and_digest() {
        let d = Digest::sha256(b"abc");
        assert!(verify(b"abc", &d, Some(3)).is_ok());
        assert!(verify(b"abc", &d, None).is_ok());
        assert!(matches!(
            verify(b"abc", &d, Some(4)),
            Err(Problem::DigestMismatch(_))
        ));
        assert!(matches!(
            verify(b"abd", &d, Some(3)),
            Err(Problem::DigestMismatch(_))
        ));
    }

    /// A source serving fixed bytes per digest (and `fallback` for any other digest).
    struct MapSource {
        top: Vec<u8>,
        objects: std::collections::HashMap<String, Vec<u8>>,
        fallback: Option<Vec<u8>>,
    }

    impl Source for MapSource {
        fn name(&self) -> String {
            "map".into()
        }
        fn pinned(&self) -> Option<Digest> {
            None
        }
        async fn top(&self) -> Result<crate::source::Fetched, FetchError> {
            Ok(crate::source::Fetched {
                bytes: self.top.clone(),
                media_type: None,
                claimed_digest: None,
                claimed_size: None,
            })
        }
        async fn manifest(&self, d: &Digest, _: u64) -> Result<Vec<u8>, FetchError> {
            self.objects
                .get(&d.to_string())
                .or(self.fallback.as_ref())
                .cloned()
                .ok_or_else(|| FetchError::NotFound(d.to_string()))
        }
        async fn blob(&self, d: &Digest, limit: u64) -> Result<Vec<u8>, FetchError> {
            self.manifest(d, limit).await
        }
    }

    /// A [`MapSource`] that says it checks digests as it reads (as the registry does).
    struct CheckingSource(MapSource);

    impl Source for CheckingSource {
        fn name(&self) -> String {
            self.0.name()
        }
        fn pinned(&self) -> Option<Digest> {
            self.0.pinned()
        }
        fn checks_digests(&self) -> bool {
            true
        }
        async fn top(&self) -> Result<crate::source::Fetched, FetchError> {
            self.0.top().await
        }
        async fn manifest(&self, d: &Digest, limit: u64) -> Result<Vec<u8>, FetchError> {
            self.0.manifest(d, limit).await
        }
        async fn blob(&self, d: &Digest, limit: u64) -> Result<Vec<u8>, FetchError> {
            self.0.blob(d, limit).await
        }
    }

    /// The child's bytes are hashed once: by a source that checks digests as it reads, else
    /// by the walk. The size that named them is checked either way.
    #[tokio::test]
    async fn a_body_is_hashed_by_the_source_or_by_the_walk() {
        let named = br#"{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[]}"#;
        let same_size = br#"{"manifests":[],"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json"}"#;
        let longer = br#"{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[]} "#;
        let digest = Digest::sha256(named).to_string();
        let map = |served: &[u8]| MapSource {
            top: index_of(named),
            objects: [(digest.clone(), served.to_vec())].into(),
            fallback: None,
        };
        let child = |graph: &Graph| match &graph.root.content {
            Content::Index { children, .. } => children[0].clone().unwrap().content,
            other => panic!("{other:?}"),
        };
        let opts = WalkOptions::default();
        // (source checks digests, bytes served, the walk finds a mismatch)
        let rows: [(bool, &[u8], bool); 5] = [
            (false, named, false),
            (false, same_size, true),
            (true, named, false),
            // The source vouched for these bytes: the walk does not hash them again.
            (true, same_size, false),
            (true, longer, true),
        ];
        for (checks, served, mismatch) in rows {
            let graph = if checks {
                walk(&CheckingSource(map(served)), opts).await
            } else {
                walk(&map(served), opts).await
            };
            let content = child(&graph.unwrap());
            assert_eq!(
                matches!(content, Content::Problem(Problem::DigestMismatch(_))),
                mismatch,
                "checks {checks}, served {}: {content:?}",
                String::from_utf8_lossy(served)
            );
        }
        // A top object by tag is named by what its bytes hash to.
        let graph = walk(&map(named), opts).await.unwrap();
        assert_eq!(graph.root.digest, Digest::sha256(&index_of(named)));
    }

    fn index_of(child: &[u8]) -> Vec<u8> {
        format!(
            r#"{{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[{{"mediaType":"application/vnd.oci.image.index.v1+json","digest":"{}","size":{}}}]}}"#,
            Digest::sha256(child),
            child.len()
        )
        .into_bytes()
    }

    fn depth_reached(node: &Node) -> (usize, Option<Problem>) {
        match &node.content {
            Content::Index { children, .. } => match children.first() {
                Some(Some(c)) => {
                    let (d, p) = depth_reached(c);
                    (d + 1, p)
                }
                _ => (0, None),
            },
            Content::Problem(p) => (0, Some(p.clone())),
            _ => (0, None),
        }
    }

    #[tokio::test]
    async fn deep_and_cyclic_indexes_end_in_a_clear_problem() {
        // A chain of nested indexes deeper than MAX_DEPTH.
        let mut objects = std::collections::HashMap::new();
        let mut bytes = br#"{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[]}"#.to_vec();
        for _ in 0..MAX_DEPTH + 3 {
            let parent = index_of(&bytes);
            objects.insert(Digest::sha256(&bytes).to_string(), bytes);
            bytes = parent;
        }
        let source = MapSource {
            top: bytes,
            objects,
            fallback: None,
        };
        let graph = walk(&source, WalkOptions::default()).await.unwrap();
        let (depth, problem) = depth_reached(&graph.root);
        assert_eq!(depth, MAX_DEPTH + 1);
        assert!(
            matches!(&problem, Some(Problem::Bad(m)) if m.contains("nested more than")),
            "{problem:?}"
        );

        // A "cycle": a source answering every digest with the top index itself. Content
        // addressing makes a real cycle impossible; the lie is a digest mismatch, one level
        // down, and the walk ends.
        let child = b"anything";
        let top = index_of(child);
        let source = MapSource {
            top: top.clone(),
            objects: Default::default(),
            fallback: Some(top),
        };
        let graph = walk(&source, WalkOptions::default()).await.unwrap();
        let (depth, problem) = depth_reached(&graph.root);
        assert_eq!(depth, 1);
        assert!(
            matches!(problem, Some(Problem::DigestMismatch(_))),
            "{problem:?}"
        );
    }

    /// Issue 33, item 7 (b): a child the descriptor calls an index whose body is an image
    /// manifest is unusable as the list claims it (containerd), and kept as its body reads
    /// (containers/image); a body unusable whatever the claim keeps no second reading.
    #[tokio::test]
    async fn a_child_of_another_kind_than_claimed_is_kept_as_served() {
        let config = br#"{"os":"linux","architecture":"amd64"}"#;
        let manifest = format!(
            r#"{{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"{}","size":{}}},"layers":[]}}"#,
            Digest::sha256(config),
            config.len()
        );
        let list = br#"{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[]}"#;
        let rows: [(&[u8], bool, bool); 3] = [
            // (child body, unusable as claimed, an image as served)
            (manifest.as_bytes(), true, true),
            (list, false, false),
            (b"{}", true, false),
        ];
        for (body, unusable, served_image) in rows {
            let source = MapSource {
                top: index_of(body),
                objects: [
                    (Digest::sha256(body).to_string(), body.to_vec()),
                    (Digest::sha256(config).to_string(), config.to_vec()),
                ]
                .into(),
                fallback: None,
            };
            let graph = walk(&source, WalkOptions::default()).await.unwrap();
            let Content::Index { children, .. } = &graph.root.content else {
                panic!("{:?}", graph.root.content);
            };
            let child = children[0].as_ref().unwrap();
            let text = String::from_utf8_lossy(body);
            assert_eq!(
                matches!(child.content, Content::Problem(_)),
                unusable,
                "{text}"
            );
            let served = child.served.as_ref().and_then(|n| n.image());
            assert_eq!(served.is_some(), served_image, "{text}");
        }
    }
}
