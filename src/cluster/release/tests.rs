//! `image-references` parsing, and the search through a release image's layers, over images
//! built in memory (gzip tar layers, OCI manifests and indexes).

use std::collections::HashMap;
use std::io::Write;

use serde_json::json;

use super::*;
use crate::error::{Blame, Fault};
use crate::graph::layer::Limits;
use crate::source::Fetched;

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/fixtures/release/image-references"
);

fn stream(tags: serde_json::Value) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "kind": "ImageStream",
        "apiVersion": "image.openshift.io/v1",
        "metadata": {"name": "4.18.0"},
        "spec": {"tags": tags}
    }))
    .unwrap()
}

fn tag(name: &str, kind: &str, from: &str) -> serde_json::Value {
    json!({"name": name, "from": {"kind": kind, "name": from}})
}

const CLI: &str = "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:\
                   aee7f07cbc761e3839f0040b8d3cf6adaa47b09bd6bec3cd4a5358c3f4d31a40";

#[test]
fn reads_the_fixture_in_file_order() {
    let bytes = std::fs::read(FIXTURE).unwrap();
    let (version, tags) = parse_image_references(&bytes, "fixture").unwrap();
    assert_eq!(version.as_deref(), Some("4.18.0"));
    assert_eq!(tags.len(), 14);
    let names: Vec<&str> = tags.iter().map(|t| t.name.as_str()).collect();
    for want in [
        "azure-file-csi-driver",
        "vsphere-csi-driver",
        "csi-node-driver-registrar",
        "csi-livenessprobe",
        "cli",
        "installer",
        "must-gather",
    ] {
        assert!(names.contains(&want), "{want} in {names:?}");
    }
    let mut sorted = names.clone();
    sorted.sort_unstable();
    assert_eq!(
        names, sorted,
        "the fixture lists tags sorted, as oc writes them"
    );
    assert!(matches!(&tags[0].image, ImageRef::Registry(r)
        if r.registry == "quay.io" && r.repository == "openshift-release-dev/ocp-v4.0-art-dev"
            && r.digest.is_some()));
}

#[test]
fn reads_yaml_too() {
    let yaml = format!(
        "kind: ImageStream\napiVersion: image.openshift.io/v1\nmetadata:\n  name: 4.18.1\n\
         spec:\n  tags:\n  - name: cli\n    from:\n      kind: DockerImage\n      name: {CLI}\n"
    );
    let (version, tags) = parse_image_references(yaml.as_bytes(), "y").unwrap();
    assert_eq!(version.as_deref(), Some("4.18.1"));
    assert_eq!(tags.len(), 1);
    assert_eq!(tags[0].image.to_string(), CLI);
}

#[test]
fn bad_image_references_name_the_origin_tag_and_field() {
    let ok = tag("cli", "DockerImage", CLI);
    let cases: Vec<(&str, Vec<u8>, &str)> =
        vec![
        ("not a document", b"{\"kind\": ".to_vec(), "neither JSON nor YAML"),
        (
            "a ConfigMap",
            br#"{"kind":"ConfigMap","apiVersion":"v1"}"#.to_vec(),
            "kind \"ConfigMap\" apiVersion \"v1\": expected an ImageStream",
        ),
        (
            "other apiVersion",
            br#"{"kind":"ImageStream","apiVersion":"v1"}"#.to_vec(),
            "apiVersion \"v1\"",
        ),
        (
            "no spec.tags",
            br#"{"kind":"ImageStream","apiVersion":"image.openshift.io/v1"}"#.to_vec(),
            "spec.tags is missing",
        ),
        ("empty tags", stream(json!([])), "spec.tags is empty"),
        (
            "tags not a list",
            stream(json!({"cli": 1})),
            "spec.tags is {\"cli\":1}, expected a list",
        ),
        (
            "no name",
            stream(json!([ok, {"from": {"kind": "DockerImage", "name": CLI}}])),
            "spec.tags[1].name is missing",
        ),
        (
            "ImageStreamTag",
            stream(json!([tag("cli", "ImageStreamTag", "cli:latest")])),
            "spec.tags[0] (\"cli\"): from.kind is \"ImageStreamTag\", expected DockerImage",
        ),
        (
            "no from.name",
            stream(json!([{"name": "cli", "from": {"kind": "DockerImage"}}])),
            "spec.tags[0] (\"cli\"): from.name is missing",
        ),
        (
            "bad pullspec",
            stream(json!([tag("cli", "DockerImage", "Quay.io/UPPER//x")])),
            "from.name \"Quay.io/UPPER//x\" is not an image reference",
        ),
        (
            "layout pullspec",
            stream(json!([tag("cli", "DockerImage", "oci:/tmp/x")])),
            "is not a registry reference",
        ),
        (
            // A pull spec, as the cluster reads it: no transport.
            "transport pullspec",
            stream(json!([tag("cli", "DockerImage", "docker://quay.io/a/b:1")])),
            "from.name \"docker://quay.io/a/b:1\" is not an image reference",
        ),
        (
            "duplicate",
            stream(json!([ok, tag("installer", "DockerImage", CLI), ok])),
            "spec.tags[2]: the name \"cli\" appears twice",
        ),
        (
            "numeric version",
            br#"{"kind":"ImageStream","apiVersion":"image.openshift.io/v1","metadata":{"name":4}}"#
                .to_vec(),
            "metadata.name is 4, not a string",
        ),
    ];
    for (what, bytes, want) in cases {
        let err = parse_image_references(&bytes, "rel:4.18 layer sha256:ab").unwrap_err();
        let text = err.to_string();
        assert!(
            text.starts_with("release rel:4.18 layer sha256:ab: ") && text.contains(want),
            "{what}: {text}"
        );
        assert_eq!(err.kind, ReleaseErrorKind::NotARelease, "{what}");
        assert_eq!(err.fault(), Fault::Input, "{what}");
    }
}

// ---- layers and images built in memory ----

/// One raw tar entry (no checks on the name, unlike `tar::Builder`) of type `flag`.
fn entry(name: &str, flag: u8, data: &[u8]) -> Vec<u8> {
    let mut h = tar::Header::new_ustar();
    h.as_mut_bytes()[..name.len()].copy_from_slice(name.as_bytes());
    h.set_size(data.len() as u64);
    h.set_mode(0o644);
    h.as_mut_bytes()[156] = flag;
    h.set_cksum();
    let mut out = h.as_bytes().to_vec();
    out.extend_from_slice(data);
    out.resize(512 + data.len().div_ceil(512) * 512, 0);
    out
}

fn file(name: &str, data: &[u8]) -> Vec<u8> {
    entry(name, b'0', data)
}

fn tar(entries: &[Vec<u8>]) -> Vec<u8> {
    [entries.concat(), vec![0; 1024]].concat()
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(bytes).unwrap();
    enc.finish().unwrap()
}

fn refs() -> Vec<u8> {
    stream(json!([tag("cli", "DockerImage", CLI)]))
}

/// Another valid list: read instead of [`refs`], it passes the wrong images.
fn decoy_refs() -> Vec<u8> {
    stream(json!([tag("decoy", "DockerImage", CLI)]))
}

fn decoy() -> Vec<u8> {
    file("release-manifests/image-references", &decoy_refs())
}

fn manifests_entry() -> Vec<u8> {
    file("release-manifests/0000_00_a.yaml", b"kind: x")
}

/// A release-like image in memory: blobs by digest, and the top object.
struct Memory {
    top: (Vec<u8>, &'static str),
    objects: HashMap<String, Vec<u8>>,
}

impl Source for Memory {
    fn name(&self) -> String {
        "mem/release:4.18".into()
    }
    fn pinned(&self) -> Option<Digest> {
        None
    }
    async fn top(&self) -> Result<Fetched, FetchError> {
        Ok(Fetched {
            bytes: self.top.0.clone(),
            media_type: Some(self.top.1.to_string()),
            claimed_digest: None,
            claimed_size: None,
        })
    }
    async fn manifest(&self, d: &Digest, _: u64) -> Result<Vec<u8>, FetchError> {
        self.blob(d, 0).await
    }
    async fn blob(&self, d: &Digest, _: u64) -> Result<Vec<u8>, FetchError> {
        self.objects
            .get(&d.to_string())
            .cloned()
            .ok_or_else(|| FetchError::NotFound(d.to_string()))
    }
}

impl Memory {
    fn put(&mut self, bytes: Vec<u8>) -> serde_json::Value {
        let digest = Digest::sha256(&bytes).to_string();
        let size = bytes.len();
        self.objects.insert(digest.clone(), bytes);
        json!({"digest": digest, "size": size})
    }

    /// An OCI image of `layers` (base first); returns its manifest's descriptor.
    fn image(&mut self, layers: &[Vec<u8>], arch: &str) -> serde_json::Value {
        let config = self.put(
            serde_json::to_vec(&json!({"architecture": arch, "os": "linux", "rootfs": {}}))
                .unwrap(),
        );
        let layers: Vec<_> = layers
            .iter()
            .map(|l| {
                let mut d = self.put(l.clone());
                d["mediaType"] = json!("application/vnd.oci.image.layer.v1.tar+gzip");
                d
            })
            .collect();
        let manifest = json!({
            "schemaVersion": 2,
            "mediaType": crate::manifest::OCI_MANIFEST,
            "config": {"mediaType": crate::manifest::OCI_CONFIG, "digest": config["digest"], "size": config["size"]},
            "layers": layers,
        });
        let bytes = serde_json::to_vec(&manifest).unwrap();
        self.top = (bytes.clone(), crate::manifest::OCI_MANIFEST);
        let mut d = self.put(bytes);
        d["mediaType"] = json!(crate::manifest::OCI_MANIFEST);
        d["platform"] = json!({"os": "linux", "architecture": arch});
        d
    }

    fn single(layers: &[Vec<u8>]) -> Memory {
        let mut m = Memory {
            top: (vec![], ""),
            objects: HashMap::new(),
        };
        m.image(layers, "amd64");
        m
    }
}

async fn read(m: &Memory) -> Result<Release, ReleaseError> {
    read_from(m, "mem/release:4.18").await
}

/// The error and its causes, as the CLI prints them (`: ` here instead of `caused by:`).
fn chain(err: &ReleaseError) -> String {
    let mut text = err.to_string();
    let mut cause = std::error::Error::source(err);
    while let Some(c) = cause {
        text = format!("{text}: {c}");
        cause = c.source();
    }
    text
}

/// Release layers holding the file somewhere: what each case is, its layers, and the index of
/// the layer the file must be read from.
fn layers_holding_the_file() -> Vec<(&'static str, Vec<Vec<u8>>, usize)> {
    [plain_layers(), decoy_layers()].concat()
}

/// Issue 22, item 1: a later layer holding a decoy a Linux runtime never sees.
fn decoy_layers() -> Vec<(&'static str, Vec<Vec<u8>>, usize)> {
    vec![
        (
            "a decoy after the end-of-archive marker (reader.go, Reader.readHeader: two zero \
             blocks end the archive)",
            vec![
                gzip(&tar(&[file("release-manifests/image-references", &refs())])),
                gzip(&[tar(&[manifests_entry()]), tar(&[decoy()])].concat()),
            ],
            0,
        ),
        (
            "a decoy named with a backslash, an ordinary character on Linux (containers/storage \
             pkg/archive UnpackLayer: filepath.Clean)",
            vec![
                gzip(&tar(&[file("release-manifests/image-references", &refs())])),
                gzip(&tar(&[file(
                    "release-manifests\\image-references",
                    &decoy_refs(),
                )])),
            ],
            0,
        ),
        (
            "a decoy under a PAX path the GNU long name overrides (reader.go, Reader.next)",
            vec![
                gzip(&tar(&[file("release-manifests/image-references", &refs())])),
                gzip(&tar(&[
                    entry("pax", b'x', b"43 path=release-manifests/image-references\n"),
                    entry("long", b'L', b"release-manifests/other\0"),
                    decoy(),
                ])),
            ],
            0,
        ),
    ]
}

fn plain_layers() -> Vec<(&'static str, Vec<Vec<u8>>, usize)> {
    let manifests = gzip(&tar(&[file(
        "release-manifests/0000_00_a.yaml",
        b"kind: x",
    )]));
    vec![
        (
            "last layer, leading ./",
            vec![
                manifests.clone(),
                gzip(&tar(&[file(
                    "./release-manifests/image-references",
                    &refs(),
                )])),
            ],
            1,
        ),
        (
            "an earlier layer",
            vec![
                gzip(&tar(&[file("release-manifests/image-references", &refs())])),
                manifests.clone(),
            ],
            0,
        ),
        (
            "the tar stream continued in a second gzip member",
            vec![
                manifests.clone(),
                [
                    gzip(&file("release-manifests/0000_01_b.yaml", b"x")),
                    gzip(&tar(&[file("release-manifests/image-references", &refs())])),
                ]
                .concat(),
            ],
            1,
        ),
        (
            "plain tar, the last entry of the name wins",
            vec![tar(&[
                file("release-manifests/image-references", b"not json"),
                file("release-manifests/image-references", &refs()),
            ])],
            0,
        ),
        (
            "a zstd layer",
            vec![ruzstd::encoding::compress_to_vec(
                &tar(&[file("release-manifests/image-references", &refs())])[..],
                ruzstd::encoding::CompressionLevel::Fastest,
            )],
            0,
        ),
        (
            "a later layer replaces it",
            vec![
                gzip(&tar(&[file("release-manifests/image-references", b"old")])),
                gzip(&tar(&[file("release-manifests/image-references", &refs())])),
            ],
            1,
        ),
        (
            "a later layer deletes something else",
            vec![
                gzip(&tar(&[file("release-manifests/image-references", &refs())])),
                gzip(&tar(&[file("release-manifests/.wh.0000_00_a.yaml", b"")])),
            ],
            0,
        ),
    ]
}

#[tokio::test]
async fn finds_the_file_from_the_last_layer_down() {
    for (what, layers, at) in layers_holding_the_file() {
        let m = Memory::single(&layers);
        let release = read(&m).await.unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(release.tags.len(), 1, "{what}");
        assert_eq!(release.version.as_deref(), Some("4.18.0"), "{what}");
        assert_eq!(
            release.layer,
            Digest::sha256(&layers[at]).to_string(),
            "{what}"
        );
        assert_eq!(release.digest, Digest::sha256(&m.top.0).to_string());
        assert_eq!(release.from_index, None);
    }
}

/// Releases whose layers do not give a runtime the file: what each is, its layers, and what
/// the error says.
fn releases_without_the_file() -> Vec<(&'static str, Vec<Vec<u8>>, &'static str)> {
    let with_file = gzip(&tar(&[file("release-manifests/image-references", &refs())]));
    let mut cases = decoys_without_the_file(&with_file);
    cases.extend(vec![
        (
            "no file",
            vec![gzip(&tar(&[file(
                "release-manifests/0000_00_a.yaml",
                b"x",
            )]))],
            "none of its 1 layers holds release-manifests/image-references",
        ),
        (
            "whiteout",
            vec![
                with_file.clone(),
                gzip(&tar(&[file("release-manifests/.wh.image-references", b"")])),
            ],
            "deletes release-manifests/image-references (a whiteout",
        ),
        (
            "opaque directory",
            vec![
                with_file.clone(),
                gzip(&tar(&[file("release-manifests/.wh..wh..opq", b"")])),
            ],
            "(a whiteout",
        ),
        (
            "directory deleted",
            vec![
                with_file.clone(),
                gzip(&tar(&[file("./.wh.release-manifests", b"")])),
            ],
            "(a whiteout",
        ),
        (
            "symbolic link",
            vec![gzip(&tar(&[entry(
                "release-manifests/image-references",
                b'2',
                b"",
            )]))],
            "\"release-manifests/image-references\" is a symbolic link (to \"\"): the \
             cluster-version operator would read the file through it",
        ),
        (
            "bad ImageStream",
            vec![gzip(&tar(&[file(
                "release-manifests/image-references",
                b"{\"kind\":\"List\"}",
            )]))],
            "release-manifests/image-references: kind \"List\"",
        ),
    ]);
    cases
}

/// Issue 22, item 1: a later layer whose decoy a Linux runtime removes or never unpacks.
fn decoys_without_the_file(with_file: &[u8]) -> Vec<(&'static str, Vec<Vec<u8>>, &'static str)> {
    let with_file = with_file.to_vec();
    vec![
        (
            "a decoy whited out in its own layer: the whiteout removes it and the lower file \
             (containers/storage pkg/archive UnpackLayer)",
            vec![
                with_file.clone(),
                gzip(&tar(&[
                    decoy(),
                    file("release-manifests/.wh.image-references", b""),
                ])),
            ],
            "(a whiteout",
        ),
        (
            "a symbolic link in place of the directory",
            vec![
                with_file.clone(),
                gzip(&tar(&[entry("release-manifests", b'2', b"")])),
            ],
            "\"release-manifests\" is a symbolic link",
        ),
        (
            "a decoy after one zero block (reader.go, Reader.readHeader: ErrHeader)",
            vec![
                with_file.clone(),
                gzip(&[manifests_entry(), vec![0; 512], decoy(), vec![0; 1024]].concat()),
            ],
            "a zero block followed by a header",
        ),
        (
            "a decoy outside of the root (containers/storage pkg/archive UnpackLayer: \
             breakout)",
            vec![
                with_file.clone(),
                gzip(&tar(&[file(
                    "../release-manifests/image-references",
                    &decoy_refs(),
                )])),
            ],
            "is outside of the layer's root",
        ),
    ]
}

#[tokio::test]
async fn releases_that_do_not_hold_the_file_fail_clearly() {
    for (what, layers, want) in releases_without_the_file() {
        let err = read(&Memory::single(&layers)).await.unwrap_err();
        let text = chain(&err);
        assert!(
            text.starts_with("release mem/release:4.18: ") && text.contains(want),
            "{what}: {text}"
        );
        assert_eq!(err.fault(), Fault::Input, "{what}");
    }
}

#[test]
fn a_file_over_the_cap_is_refused() {
    let layer = gzip(&tar(&[file(
        "release-manifests/image-references",
        &[b' '; 100],
    )]));
    let limits = Limits::for_compressed_size(layer.len() as u64);
    let got = find_file(&layer[..], limits.clone(), IMAGE_REFERENCES, 99);
    assert!(
        matches!(&got, Err(Problem::Bad(m)) if m == "release-manifests/image-references is 100 bytes, larger than the 99-byte limit"),
        "{got:?}"
    );
    let got = find_file(&layer[..], limits, IMAGE_REFERENCES, 100).unwrap();
    assert_eq!(got.file.map(|f| f.len()), Some(100));
}

#[tokio::test]
async fn a_layer_whose_bytes_are_not_its_own_is_never_trusted() {
    let layer = gzip(&tar(&[file("release-manifests/image-references", &refs())]));
    let mut m = Memory::single(std::slice::from_ref(&layer));
    let digest = Digest::sha256(&layer).to_string();
    // The same file, in other bytes (a trailing byte after the gzip member).
    let mut other = layer.clone();
    other.push(0);
    m.objects.insert(digest.clone(), other);
    let err = read(&m).await.unwrap_err();
    assert!(
        err.to_string().contains(&format!("layer {digest}")),
        "{err}"
    );
    assert!(
        std::error::Error::source(&err)
            .unwrap()
            .to_string()
            .contains("descriptor says"),
        "{err:?}"
    );
    assert_eq!(err.kind, ReleaseErrorKind::Unavailable);
    assert_eq!(err.fault(), Fault::Unavailable);
    // Same length, another byte: the digest.
    let mut flipped = layer.clone();
    let last = flipped.len() - 1;
    flipped[last] ^= 1;
    m.objects.insert(digest, flipped);
    let err = read(&m).await.unwrap_err();
    assert!(
        std::error::Error::source(&err)
            .unwrap()
            .to_string()
            .contains("hashes to"),
        "{err:?}"
    );
}

#[tokio::test]
async fn an_index_leads_to_its_amd64_child_else_its_first_linux_one() {
    let good = gzip(&tar(&[file("release-manifests/image-references", &refs())]));
    let empty = gzip(&tar(&[file("release-manifests/0000_00_a.yaml", b"x")]));
    let index = |m: &mut Memory, children: Vec<serde_json::Value>| {
        let bytes = serde_json::to_vec(&json!({
            "schemaVersion": 2,
            "mediaType": crate::manifest::OCI_INDEX,
            "manifests": children,
        }))
        .unwrap();
        m.top = (bytes, crate::manifest::OCI_INDEX);
    };
    // arm64 first (without the file), amd64 second (with it): amd64 is read.
    let mut m = Memory::single(&[]);
    let arm = m.image(std::slice::from_ref(&empty), "arm64");
    let amd = m.image(std::slice::from_ref(&good), "amd64");
    index(&mut m, vec![arm.clone(), amd.clone()]);
    let release = read(&m).await.unwrap();
    assert_eq!(release.digest, amd["digest"].as_str().unwrap());
    let (index_digest, platform) = release.from_index.unwrap();
    assert_eq!(index_digest, Digest::sha256(&m.top.0).to_string());
    assert_eq!(platform, "linux/amd64");
    // No amd64: the first Linux child.
    let ppc = m.image(std::slice::from_ref(&good), "ppc64le");
    let mut windows = amd.clone();
    windows["platform"] = json!({"os": "windows", "architecture": "amd64"});
    index(&mut m, vec![windows.clone(), ppc.clone(), arm]);
    let release = read(&m).await.unwrap();
    assert_eq!(release.digest, ppc["digest"].as_str().unwrap());
    assert_eq!(release.from_index.unwrap().1, "linux/ppc64le");
    // No Linux child at all.
    index(&mut m, vec![windows]);
    let err = read(&m).await.unwrap_err();
    assert!(err.to_string().contains("has no linux child"), "{err}");
    assert_eq!(err.fault(), Fault::Input);
}

#[test]
fn missing_and_unreachable_releases_say_whose_fault_they_are() {
    let table = [
        (FetchError::NotFound("tag 4.99".into()), Fault::Input),
        (FetchError::BadInput("not a layout".into()), Fault::Input),
        (FetchError::Unavailable("reset".into()), Fault::Unavailable),
        (
            FetchError::DigestMismatch {
                expected: "a".into(),
                actual: "b".into(),
            },
            Fault::Unavailable,
        ),
    ];
    for (e, want) in table {
        let err = ReleaseError::fetch("r", "cannot fetch the release image", e.clone());
        assert_eq!(err.fault(), want, "{e}");
        assert_eq!(err.to_string(), "release r: cannot fetch the release image");
    }
}

/// Issue 22, item 4: `image-references` nesting brackets deeper than any real one (`[[[…`:
/// 400 KiB of them ran past 120 s in libyaml's scanner) is refused by the guard every YAML and
/// JSON input goes through, in YAML and in JSON, naming the nesting.
#[test]
fn deep_nesting_is_refused_by_the_input_guard() {
    let deep = format!("{}{}", "[".repeat(100), "]".repeat(100));
    let cases = [
        format!("kind: ImageStream\napiVersion: image.openshift.io/v1\nspec:\n  tags: {deep}\n"),
        format!(
            r#"{{"kind":"ImageStream","apiVersion":"image.openshift.io/v1","spec":{{"tags":{deep}}}}}"#
        ),
    ];
    for text in cases {
        let e = parse_image_references(text.as_bytes(), "refs").unwrap_err();
        let shown = crate::error::one_line(&e);
        assert!(
            shown.starts_with("release refs: ") && shown.contains("nested more than 64 levels"),
            "{shown}"
        );
    }
}
