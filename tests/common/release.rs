//! OpenShift-release-shaped images, written at test time and pushed to a [`Registry`]: an OCI
//! image whose first gzip tar layer holds some `release-manifests/0000_*.yaml` files and whose
//! last holds `release-manifests/image-references` (an `ImageStream` naming the components)
//! and `release-manifests/release-metadata`, as in an `oc adm release new` payload
//! (fixtures/README.md, "Release payloads").

use std::io::Write;

use serde_json::{Value, json};

use super::{Damage, ManifestObj, OCI_INDEX, OCI_MANIFEST, Registry, sha256_digest};

const OCI_CONFIG: &str = "application/vnd.oci.image.config.v1+json";
const LAYER_GZIP: &str = "application/vnd.oci.image.layer.v1.tar+gzip";
/// The release version written into the payload.
pub const RELEASE_VERSION: &str = "4.18.0";

/// The `image-references` of a release naming `components` (tag name, pull spec), as JSON.
pub fn image_references(components: &[(&str, &str)]) -> Vec<u8> {
    let tags: Vec<Value> = components
        .iter()
        .map(|(name, image)| {
            json!({
                "name": name,
                "annotations": {
                    "io.openshift.build.commit.id": "0123456789abcdef0123456789abcdef01234567",
                    "io.openshift.build.source-location": format!("https://github.com/openshift/{name}"),
                },
                "from": {"kind": "DockerImage", "name": image},
                "generation": 2,
                "importPolicy": {},
                "referencePolicy": {"type": "Source"},
            })
        })
        .collect();
    serde_json::to_vec_pretty(&json!({
        "kind": "ImageStream",
        "apiVersion": "image.openshift.io/v1",
        "metadata": {
            "name": RELEASE_VERSION,
            "creationTimestamp": "2025-02-17T10:41:22Z",
            "annotations": {"release.openshift.io/from-image-stream": "ocp/4.18-art-latest"},
        },
        "spec": {"lookupPolicy": {"local": false}, "tags": tags},
        "status": {"dockerImageRepository": ""},
    }))
    .unwrap()
}

/// A single-arch (linux/amd64) release naming `components`, pushed as `repo:tag`; returns
/// its `docker://` reference.
pub fn push_release(
    registry: &Registry,
    repo: &str,
    tag: &str,
    components: &[(&str, &str)],
) -> String {
    push_release_for(registry, repo, tag, components, &["amd64"])
}

/// A `-multi` release naming `components`: an OCI index of linux/amd64 and linux/arm64
/// release images (each with the same `image-references`), pushed as `repo:tag`.
pub fn push_release_multi(
    registry: &Registry,
    repo: &str,
    tag: &str,
    components: &[(&str, &str)],
) -> String {
    push_release_for(registry, repo, tag, components, &["arm64", "amd64"])
}

/// A release naming `components` for `arches` (one image, or an index in that order).
fn push_release_for(
    registry: &Registry,
    repo: &str,
    tag: &str,
    components: &[(&str, &str)],
    arches: &[&str],
) -> String {
    let refs = image_references(components);
    push_payload(
        registry,
        repo,
        tag,
        &[("release-manifests/image-references", &refs)],
        arches,
    )
}

/// A release-shaped image whose last layer holds `last_layer` (path, bytes) and
/// `release-manifests/release-metadata`: one image for one architecture, an index of one per
/// architecture (in the order given) for several. Returns the `docker://` reference.
pub fn push_payload(
    registry: &Registry,
    repo: &str,
    tag: &str,
    last_layer: &[(&str, &[u8])],
    arches: &[&str],
) -> String {
    let mut images: Vec<(Value, Vec<u8>)> = arches
        .iter()
        .map(|arch| push_image(registry, repo, last_layer, arch))
        .collect();
    let (bytes, media_type) = if images.len() == 1 {
        (images.remove(0).1, OCI_MANIFEST)
    } else {
        let children: Vec<Value> = images.into_iter().map(|(d, _)| d).collect();
        let index = json!({"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": children});
        (serde_json::to_vec(&index).unwrap(), OCI_INDEX)
    };
    put(registry, repo, &bytes, media_type, Some(tag));
    registry.docker_ref(repo, tag)
}

/// Uploads one release image for `arch`; returns its manifest's index descriptor and bytes.
fn push_image(
    registry: &Registry,
    repo: &str,
    last_layer: &[(&str, &[u8])],
    arch: &str,
) -> (Value, Vec<u8>) {
    let metadata = json!({"kind": "cincinnati-metadata-v0", "version": RELEASE_VERSION});
    let metadata = serde_json::to_vec(&metadata).unwrap();
    let first: Vec<(&str, &[u8])> = vec![
        (
            "release-manifests/0000_00_cluster-version-operator_00_namespace.yaml",
            b"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: openshift-cluster-version\n",
        ),
        (
            "release-manifests/0000_50_cluster-storage-operator_10_deployment.yaml",
            b"apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: cluster-storage-operator\n",
        ),
    ];
    let mut last = last_layer.to_vec();
    last.push(("release-manifests/release-metadata", &metadata));
    push_tars(registry, repo, &[tar_of(&first), tar_of(&last)], arch)
}

/// A single-arch (linux/amd64) release-shaped image whose layers are `tars` (base first,
/// gzipped as they are, whatever they hold), pushed as `repo:tag`; returns its `docker://`
/// reference.
pub fn push_release_tars(registry: &Registry, repo: &str, tag: &str, tars: &[Vec<u8>]) -> String {
    let (_, bytes) = push_tars(registry, repo, tars, "amd64");
    put(registry, repo, &bytes, OCI_MANIFEST, Some(tag));
    registry.docker_ref(repo, tag)
}

/// Uploads an image of the layers `tars` for `arch`; returns its manifest's index descriptor
/// and bytes.
fn push_tars(registry: &Registry, repo: &str, tars: &[Vec<u8>], arch: &str) -> (Value, Vec<u8>) {
    let (tars, layers): (Vec<String>, Vec<Value>) = tars
        .iter()
        .map(|tar| {
            let diff_id = sha256_digest(tar);
            let gz = gzip(tar);
            (diff_id, blob(registry, repo, &gz, LAYER_GZIP))
        })
        .unzip();
    let config = json!({
        "architecture": arch,
        "os": "linux",
        "config": {"Labels": {"io.openshift.release": RELEASE_VERSION}},
        "rootfs": {"type": "layers", "diff_ids": tars},
    });
    let config = blob(
        registry,
        repo,
        &serde_json::to_vec(&config).unwrap(),
        OCI_CONFIG,
    );
    let manifest = json!({
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "config": config,
        "layers": layers,
    });
    let bytes = serde_json::to_vec(&manifest).unwrap();
    let mut d = put(registry, repo, &bytes, OCI_MANIFEST, None);
    d["platform"] = json!({"os": "linux", "architecture": arch});
    (d, bytes)
}

/// A tar of regular files (uid 0, a fixed mtime) with its end-of-archive marker.
pub fn tar_of(files: &[(&str, &[u8])]) -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    for (path, data) in files {
        let mut h = tar::Header::new_ustar();
        h.set_size(data.len() as u64);
        h.set_mode(0o644);
        h.set_mtime(1_700_000_000);
        b.append_data(&mut h, path, *data).unwrap();
    }
    b.into_inner().unwrap()
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(bytes).unwrap();
    enc.finish().unwrap()
}

/// Uploads a blob; returns its descriptor.
fn blob(registry: &Registry, repo: &str, bytes: &[u8], media_type: &str) -> Value {
    let digest = sha256_digest(bytes);
    registry.upload_blob("release", repo, &digest, bytes);
    json!({"mediaType": media_type, "digest": digest, "size": bytes.len()})
}

/// Puts a manifest by digest (and under `tag`); returns its descriptor.
fn put(
    registry: &Registry,
    repo: &str,
    bytes: &[u8],
    media_type: &str,
    tag: Option<&str>,
) -> Value {
    let digest = sha256_digest(bytes);
    let obj = ManifestObj {
        digest: digest.clone(),
        content_type: media_type.to_string(),
        bytes: bytes.to_vec(),
        damage: Damage::None,
    };
    registry.put_manifest("release", repo, tag.unwrap_or(&digest), &obj);
    json!({"mediaType": media_type, "digest": digest, "size": bytes.len()})
}
