//! `--from-release`, the library half (issue 13): release images shaped like OpenShift payloads
//! are pushed to a real `docker-registry` and read with `imgcheck::cluster::release`
//! through a `Session` built as the CLI builds one; the components are read by the same session,
//! told of them once the release is read.

use std::time::Duration;

use crate::common::release::{image_references, push_payload, push_release, push_release_multi};
use crate::common::{self, Registry, fixture};
use imgcheck::auth::AuthStore;
use imgcheck::cluster::release::{Release, ReleaseError, ReleaseErrorKind, read_release};
use imgcheck::error::{Blame, Fault};
use imgcheck::graph::WalkOptions;
use imgcheck::reference::ImageRef;
use imgcheck::session::Session;
use imgcheck::source::registry::ClientOptions;

const DIGEST: &str = "sha256:aee7f07cbc761e3839f0040b8d3cf6adaa47b09bd6bec3cd4a5358c3f4d31a40";

fn components(registry: &Registry) -> Vec<(&'static str, String)> {
    ["azure-file-csi-driver", "csi-node-driver-registrar", "cli"]
        .into_iter()
        .map(|n| (n, format!("{}/ocp/art-dev@{DIGEST}", registry.host())))
        .collect()
}

fn pairs<'a>(c: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
    c.iter().map(|(n, i)| (*n, i.as_str())).collect()
}

/// Runs `f` on a runtime of its own (the harness's blocking HTTP client must not run inside
/// one).
fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

fn session(reference: &ImageRef, options: &ClientOptions) -> Session {
    let session = Session::new(options, AuthStore::default());
    session.expect(std::slice::from_ref(reference));
    session
}

/// The digest of the manifest `repo:reference` points at, and its layers' digests.
/// Reads the release `reference` with a fresh session and default options.
fn read(reference: &str) -> Result<Release, ReleaseError> {
    let r: ImageRef = reference.parse().unwrap();
    block_on(async { read_release(&session(&r, &ClientOptions::default()), &r).await })
}

fn layers_of(registry: &Registry, repo: &str, reference: &str) -> (String, Vec<String>) {
    let digest = registry.manifest_digest(repo, reference).unwrap();
    let (_, bytes) = registry.get_manifest(repo, &digest);
    let manifest: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    let layers = manifest["layers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["digest"].as_str().unwrap().to_string())
        .collect();
    (digest, layers)
}

#[test]
fn a_single_arch_release_names_its_components_from_its_last_layer() {
    let registry = Registry::start();
    let c = components(&registry);
    let reference = push_release(&registry, "ocp/release", "4.18.0-x86_64", &pairs(&c));
    let release = read(&reference).unwrap();
    let reference: ImageRef = reference.parse().unwrap();
    let (digest, layers) = layers_of(&registry, "ocp/release", "4.18.0-x86_64");
    assert_eq!(release.digest, digest);
    assert_eq!(release.layer, layers[1], "the last of {layers:?}");
    assert_eq!(release.from_index, None);
    assert_eq!(release.version.as_deref(), Some("4.18.0"));
    assert_eq!(release.reference, reference.to_string());
    let got: Vec<(String, String)> = release
        .tags
        .iter()
        .map(|t| (t.name.clone(), t.image.to_string()))
        .collect();
    let want: Vec<(String, String)> = c.iter().map(|(n, i)| (n.to_string(), i.clone())).collect();
    assert_eq!(got, want);
}

#[test]
fn a_multi_release_is_read_through_its_amd64_child() {
    let registry = Registry::start();
    let c = components(&registry);
    let reference = push_release_multi(&registry, "ocp/release", "4.18.0-multi", &pairs(&c));
    let release = read(&reference).unwrap();
    let index_digest = registry
        .manifest_digest("ocp/release", "4.18.0-multi")
        .unwrap();
    let (_, bytes) = registry.get_manifest("ocp/release", &index_digest);
    let index: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    let children = index["manifests"].as_array().unwrap();
    assert_eq!(children[0]["platform"]["architecture"], "arm64");
    let amd64 = children[1]["digest"].as_str().unwrap();
    assert_eq!(release.digest, amd64);
    assert_eq!(
        release.from_index,
        Some((index_digest, "linux/amd64".to_string()))
    );
    assert_eq!(release.tags.len(), 3);
}

/// A release copied to an OCI layout (`skopeo copy --all docker://… oci:DIR:TAG`, for an
/// air-gapped look) reads as from the registry: the same index, child and components.
#[test]
fn a_multi_release_copied_to_an_oci_layout_reads_the_same() {
    let registry = Registry::start();
    let c = components(&registry);
    let reference = push_release_multi(&registry, "ocp/release", "4.18.0-multi", &pairs(&c));
    let dir = tempfile::tempdir().unwrap();
    let layout = format!("oci:{}:4.18.0-multi", dir.path().display());
    common::skopeo_copy_all(&reference, &layout);
    let (remote, local) = (read(&reference).unwrap(), read(&layout).unwrap());
    assert_eq!(local.reference, layout);
    assert_eq!(local.digest, remote.digest);
    assert_eq!(local.from_index, remote.from_index);
    assert_eq!(local.tags, remote.tags);
    assert_eq!(local.tags.len(), 3);
}

#[test]
fn images_that_are_not_releases_and_releases_that_do_not_exist_are_bad_input() {
    let registry = Registry::start();
    let yaml: &[u8] = b"kind: ConfigMap\n";
    let no_file = push_payload(
        &registry,
        "ocp/release",
        "no-file",
        &[("release-manifests/0000_90_other.yaml", yaml)],
        &["amd64"],
    );
    let bad = push_payload(
        &registry,
        "ocp/release",
        "bad-stream",
        &[("release-manifests/image-references", yaml)],
        &["amd64"],
    );
    let absent = registry.docker_ref("ocp/release", "4.99.0");
    let cases = [
        (
            no_file,
            "none of its 2 layers holds release-manifests/image-references",
        ),
        (
            bad,
            "release-manifests/image-references: kind \"ConfigMap\"",
        ),
        (absent, "cannot fetch the release image"),
    ];
    for (reference, want) in cases {
        let parsed: ImageRef = reference.parse().unwrap();
        let err = read(&reference).unwrap_err();
        let text = err.to_string();
        assert!(
            text.starts_with(&format!("release {parsed}: ")) && text.contains(want),
            "{reference}: {text}"
        );
        assert_eq!(err.fault(), Fault::Input, "{reference}");
    }
}

#[test]
fn the_components_are_walked_by_the_same_session_within_the_same_deadline() {
    let registry = Registry::start();
    let component = registry.push_layout(&fixture("good"), "ocp/azure-file-csi-driver", "v1");
    let pullspec = format!("{}/ocp/azure-file-csi-driver@{component}", registry.host());
    let refs = image_references(&[("azure-file-csi-driver", &pullspec)]);
    let release = push_payload(
        &registry,
        "ocp/release",
        "4.18.0",
        &[("release-manifests/image-references", &refs)],
        &["amd64"],
    );
    let release: ImageRef = release.parse().unwrap();
    block_on(async {
        let run = session(&release, &ClientOptions::default());
        let read = read_release(&run, &release).await.unwrap();
        let images: Vec<ImageRef> = read.tags.iter().map(|t| t.image.clone()).collect();
        run.expect(&images);
        let graph = run.graph(&images[0], WalkOptions::default()).await.unwrap();
        assert_eq!(graph.root.digest.to_string(), component);
        assert!(run.stats().is_some());
        // The run's deadline does not start again when the session learns the components: a
        // run whose --timeout has passed cannot read them either.
        let options = ClientOptions {
            deadline: Some(Duration::from_secs(1)),
            ..ClientOptions::default()
        };
        let late = session(&release, &options);
        tokio::time::sleep(Duration::from_millis(1100)).await;
        late.expect(&images);
        let err = late
            .graph(&images[0], WalkOptions::default())
            .await
            .unwrap_err();
        assert!(err.to_string().contains("--timeout"), "{err}");
        let err = read_release(&late, &images[0]).await.unwrap_err();
        assert_eq!(err.kind, ReleaseErrorKind::Unavailable, "{err}");
        assert_eq!(err.fault(), Fault::Unavailable);
    });
}
