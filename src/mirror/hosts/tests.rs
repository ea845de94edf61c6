//! One row per rule of the Windows pull path, each citing the WMCO or containerd file and
//! function it follows (issue 20). Each row: mirror sets (or a hosts.toml), a reference, and
//! the manifest requests a Windows node makes, in order, with their kind.

use std::path::Path;

use super::containerd::{AttemptKind, attempts, object};
use super::dir::{folder_host, parse, read};
use super::model::{ConfiguredBy, HostsConfig};
use super::wmco::{render, truncate};
use crate::mirror::config::MirrorConfig;
use crate::mirror::testing::reg;

const D: &str = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
const ART: &str = "quay.io/openshift-release-dev/ocp-v4.0-art-dev";

fn sets(yaml: &str) -> MirrorConfig {
    let mut c = MirrorConfig::default();
    c.add_mirror_sets(Path::new("sets.yaml"), yaml).unwrap();
    c
}

fn idms(entries: &str) -> String {
    format!(
        "apiVersion: config.openshift.io/v1\nkind: ImageDigestMirrorSet\nmetadata: {{name: d}}\nspec:\n  imageDigestMirrors:\n{entries}"
    )
}

fn itms(entries: &str) -> String {
    format!(
        "apiVersion: config.openshift.io/v1\nkind: ImageTagMirrorSet\nmetadata: {{name: t}}\nspec:\n  imageTagMirrors:\n{entries}"
    )
}

/// The requests of a Windows node for `reference` under `config`: `(kind, url)`.
fn requests(config: &HostsConfig, reference: &str) -> Vec<(AttemptKind, String)> {
    let r = reg(reference);
    attempts(config, &r, r.digest.is_some(), &object(&r))
        .into_iter()
        .map(|a| (a.kind, a.url))
        .collect()
}

use AttemptKind::{Mirror as M, Source as S};

#[test]
fn wmco_rendering_read_by_containerd_gives_these_requests() {
    let release = idms(&format!(
        "  - source: {ART}\n    mirrors: [mirror.example.com:5000/ocp4/openshift4]\n"
    ));
    let cases: Vec<Row> = vec![
        (
            "registries.go generateConfig: [host.\"https://HOST/v2/PATH\"] override_path = true; \
             resolver.go dockerBase.request: host path + the SOURCE repository",
            release.clone(),
            format!("{ART}@{D}"),
            vec![
                (M, format!("https://mirror.example.com:5000/v2/ocp4/openshift4/openshift-release-dev/ocp-v4.0-art-dev/manifests/{D}")),
                (S, format!("https://quay.io/v2/openshift-release-dev/ocp-v4.0-art-dev/manifests/{D}")),
            ],
        ),
        (
            "registries.go newMirrorSet/extractRegistryHostname + mergeMirrorSets: a mirror of \
             quay.io/a/b serves every repository of quay.io",
            release.clone(),
            format!("quay.io/other/image@{D}"),
            vec![
                (M, format!("https://mirror.example.com:5000/v2/ocp4/openshift4/other/image/manifests/{D}")),
                (S, format!("https://quay.io/v2/other/image/manifests/{D}")),
            ],
        ),
        (
            "registries.go newMirror/extractMirrorURL: the path shared with the source is dropped",
            idms(&format!("  - source: {ART}\n    mirrors: [mirror.example.com:5000/openshift-release-dev/ocp-v4.0-art-dev]\n")),
            format!("{ART}@{D}"),
            vec![
                (M, format!("https://mirror.example.com:5000/v2/openshift-release-dev/ocp-v4.0-art-dev/manifests/{D}")),
                (S, format!("https://quay.io/v2/openshift-release-dev/ocp-v4.0-art-dev/manifests/{D}")),
            ],
        ),
        (
            "registries.go sortMirrorSets: mirrors alphabetically, not in spec order; \
             mergeMirrorSets: two entries on one host, one file",
            idms(&format!(
                "  - source: {ART}\n    mirrors: [z.example.com/ocp4/openshift4]\n  \
                 - source: quay.io/openshift-release-dev/ocp-release\n    mirrors: [a.example.com/ocp4/release]\n"
            )),
            format!("{ART}@{D}"),
            vec![
                (M, format!("https://a.example.com/v2/ocp4/release/openshift-release-dev/ocp-v4.0-art-dev/manifests/{D}")),
                (M, format!("https://z.example.com/v2/ocp4/openshift4/openshift-release-dev/ocp-v4.0-art-dev/manifests/{D}")),
                (S, format!("https://quay.io/v2/openshift-release-dev/ocp-v4.0-art-dev/manifests/{D}")),
            ],
        ),
        (
            "registries.go generateConfig: NeverContactSource makes the first mirror the server; \
             hosts.go parseHostsFile: the server last, with every capability",
            idms(&format!("  - source: {ART}\n    mirrors: [mirror.example.com:5000/ocp4/openshift4]\n    mirrorSourcePolicy: NeverContactSource\n")),
            format!("{ART}:4.18"),
            vec![(M, "https://mirror.example.com:5000/v2/ocp4/openshift4/openshift-release-dev/ocp-v4.0-art-dev/manifests/4.18".into())],
        ),
        (
            "registries.go generateConfig: IDMS mirrors get capabilities [pull]; resolver.go \
             Resolve/filterHosts: a tag pull needs pull and resolve, so it goes to the source",
            release.clone(),
            format!("{ART}:4.18"),
            vec![(S, "https://quay.io/v2/openshift-release-dev/ocp-v4.0-art-dev/manifests/4.18".into())],
        ),
    ];
    assert_rows(cases);
}

#[test]
fn tag_pulls_icsp_and_docker_hub_under_wmco_rendering() {
    let release = idms(&format!(
        "  - source: {ART}\n    mirrors: [mirror.example.com:5000/ocp4/openshift4]\n"
    ));
    let cases: Vec<Row> = vec![
        (
            "registries.go generateConfig: ITMS mirrors get [pull, resolve]: they serve tag pulls",
            itms(&format!("  - source: {ART}\n    mirrors: [mirror.example.com:5000/ocp4/openshift4]\n")),
            format!("{ART}:4.18"),
            vec![
                (M, "https://mirror.example.com:5000/v2/ocp4/openshift4/openshift-release-dev/ocp-v4.0-art-dev/manifests/4.18".into()),
                (S, "https://quay.io/v2/openshift-release-dev/ocp-v4.0-art-dev/manifests/4.18".into()),
            ],
        ),
        (
            "registries.go GenerateConfigFiles: ImageContentSourcePolicy is not read",
            format!("apiVersion: operator.openshift.io/v1alpha1\nkind: ImageContentSourcePolicy\nmetadata: {{name: i}}\nspec:\n  repositoryDigestMirrors:\n  - source: {ART}\n    mirrors: [mirror.example.com:5000/ocp4/openshift4]\n"),
            format!("{ART}@{D}"),
            vec![(S, format!("https://quay.io/v2/openshift-release-dev/ocp-v4.0-art-dev/manifests/{D}"))],
        ),
        (
            "hosts.go ConfigureHosts: docker.io is asked at registry-1.docker.io; library/ added",
            release,
            "busybox:1".into(),
            vec![(S, "https://registry-1.docker.io/v2/library/busybox/manifests/1".into())],
        ),
    ];
    assert_rows(cases);
}

/// The manifest URL of `{ART}@{D}` under the API root `base`.
fn art(base: &str) -> String {
    format!("https://{base}/openshift-release-dev/ocp-v4.0-art-dev/manifests/{D}")
}

/// One mirror-set entry of `{ART}` with `mirrors` and, unless empty, `policy`.
fn entry(mirrors: &str, policy: &str) -> String {
    let policy = match policy {
        "" => String::new(),
        p => format!("    mirrorSourcePolicy: {p}\n"),
    };
    format!("  - source: {ART}\n    mirrors: [{mirrors}]\n{policy}")
}

/// Issue 32, item 5: which `mirrorSourcePolicy` WMCO keeps for a registry host. Each row
/// cites the file and function of openshift/windows-machine-config-operator that decides it.
#[test]
fn wmco_keeps_the_first_policy_of_a_host_unless_it_allows_contacting_the_source() {
    let quay = art("quay.io/v2");
    let cases: Vec<Row> = vec![
        (
            "pkg/registries/registries.go mergeMirrorSets: the first set's policy is kept unless it \
             is the string AllowContactingSource; an unset one is Go's \"\", so the ITMS entry's \
             NeverContactSource does nothing and the server stays the source (issue 32's example)",
            format!(
                "{}---\n{}",
                idms(&entry("10.0.0.5:5000/flat", "")),
                itms(&entry(
                    "mirror.example.net/ocp4/openshift4, 10.0.0.5:5000/team-a/openshift-release-dev/ocp-v4.0-art-dev",
                    "NeverContactSource"
                ))
            ),
            format!("{ART}@{D}"),
            vec![
                (M, art("10.0.0.5:5000/v2/flat")),
                (M, art("10.0.0.5:5000/v2/team-a")),
                (M, art("mirror.example.net/v2/ocp4/openshift4")),
                (S, quay.clone()),
            ],
        ),
        (
            "pkg/registries/registries.go mergeMirrorSets: an explicit AllowContactingSource is \
             replaced by the next set's NeverContactSource; generateConfig: the first mirror is \
             the server",
            idms(&format!(
                "{}{}",
                entry("b.example.com/ocp", "AllowContactingSource"),
                entry("a.example.com/ocp", "NeverContactSource")
            )),
            format!("{ART}@{D}"),
            vec![
                (M, art("a.example.com/v2/ocp")),
                (M, art("b.example.com/v2/ocp")),
                (M, art("a.example.com/v2/ocp")),
            ],
        ),
        (
            "pkg/registries/registries.go mergeMirrorSets: a first NeverContactSource is kept \
             whatever follows",
            idms(&format!(
                "{}{}",
                entry("a.example.com/ocp", "NeverContactSource"),
                entry("b.example.com/ocp", "AllowContactingSource")
            )),
            format!("{ART}@{D}"),
            vec![
                (M, art("a.example.com/v2/ocp")),
                (M, art("b.example.com/v2/ocp")),
                (M, art("a.example.com/v2/ocp")),
            ],
        ),
        (
            "pkg/registries/registries.go mergeMirrorSets: AllowContactingSource, then an unset \
             policy (which replaces it), then NeverContactSource (which no longer does)",
            idms(&format!(
                "{}{}{}",
                entry("a.example.com/ocp", "AllowContactingSource"),
                entry("b.example.com/ocp", ""),
                entry("c.example.com/ocp", "NeverContactSource")
            )),
            format!("{ART}@{D}"),
            vec![
                (M, art("a.example.com/v2/ocp")),
                (M, art("b.example.com/v2/ocp")),
                (M, art("c.example.com/v2/ocp")),
                (S, quay.clone()),
            ],
        ),
    ];
    assert_rows(cases);
}

/// Issue 32, item 5: in which order WMCO takes the entries of a host, and what an entry
/// without mirrors does. Each row cites the WMCO file and function that decides it.
#[test]
fn wmco_takes_idms_before_itms_and_counts_entries_without_mirrors() {
    let quay = art("quay.io/v2");
    let cases: Vec<Row> = vec![
        (
            "pkg/registries/registries.go getMergedMirrorSets: every IDMS entry before every ITMS \
             entry, whatever the file order, so the unset IDMS policy is the first",
            format!(
                "{}---\n{}",
                itms(&entry("t.example.com/ocp", "NeverContactSource")),
                idms(&entry("d.example.com/ocp", ""))
            ),
            format!("{ART}@{D}"),
            vec![
                (M, art("d.example.com/v2/ocp")),
                (M, art("t.example.com/v2/ocp")),
                (S, quay.clone()),
            ],
        ),
        (
            "pkg/registries/registries.go newMirrorSet + mergeMirrorSets: an entry without mirrors \
             is a set of its host too, and its unset policy is the one kept",
            idms(&format!(
                "  - source: quay.io/other\n{}",
                entry("a.example.com/ocp", "NeverContactSource")
            )),
            format!("{ART}@{D}"),
            vec![(M, art("a.example.com/v2/ocp")), (S, quay.clone())],
        ),
        (
            "pkg/registries/registries.go mergeMirrorSets: entries of other sources on the same \
             host merge into one file (extractMirrorURL drops z's shared 'other'), the first \
             entry's NeverContactSource kept",
            idms(&format!(
                "{}  - source: quay.io/other\n    mirrors: [z.example.com/other]\n",
                entry("a.example.com/ocp", "NeverContactSource")
            )),
            format!("{ART}@{D}"),
            vec![
                (M, art("a.example.com/v2/ocp")),
                (M, art("z.example.com/v2")),
                (M, art("a.example.com/v2/ocp")),
            ],
        ),
        (
            "pkg/registries/registries.go generateConfig: an ImageDigestMirrorSet without entries \
             writes nothing; the node pulls from the source",
            "apiVersion: config.openshift.io/v1\nkind: ImageDigestMirrorSet\nmetadata: {name: e}\nspec:\n  imageDigestMirrors: []\n".into(),
            format!("{ART}@{D}"),
            vec![(S, quay.clone())],
        ),
    ];
    assert_rows(cases);
}

/// (rule and source cited, mirror sets, reference, requests)
type Row = (&'static str, String, String, Vec<(AttemptKind, String)>);

fn assert_rows(cases: Vec<Row>) {
    for (rule, yaml, reference, want) in cases {
        let config = render(sets(&yaml).mirror_sets()).unwrap();
        assert_eq!(config.configured_by, ConfiguredBy::Wmco);
        assert_eq!(requests(&config, &reference), want, "{rule}");
    }
}

#[test]
fn the_shared_suffix_is_dropped_up_to_the_first_difference() {
    // registries.go extractMirrorURL (the loop stops at the first difference; the earlier
    // dropCommonSuffix did not), newMirror (a mirror equal to its source keeps its host).
    let cases = [
        (
            "example.com/path/to/resource",
            "example.com/path/to/resource",
            "example.com",
        ),
        (
            "example.com/path/to/resource",
            "example.org/path/to/resource",
            "example.org",
        ),
        ("example.com/a/x/b", "m.io/y/x/c", "m.io/y/x/c"),
        (
            "mcr.microsoft.com/windows/servercore",
            "quay.io/ns/windows/servercore",
            "quay.io/ns",
        ),
        (
            ART,
            "mirror.example.com:5000/ocp4/openshift4",
            "mirror.example.com:5000/ocp4/openshift4",
        ),
    ];
    for (source, mirror, want) in cases {
        assert_eq!(truncate(source, mirror), want, "{source} {mirror}");
    }
}

#[test]
fn a_source_with_a_port_is_unusable_on_windows() {
    // registries.go GenerateConfigFiles names the folder after the source host; hosts.go
    // hostDirectory looks up host_port_ first.
    let c = render(
        sets(&idms(
            "  - source: reg.local:5000/a\n    mirrors: [m.local/a]\n",
        ))
        .mirror_sets(),
    )
    .unwrap();
    let why = &c.unusable["reg.local:5000"];
    assert!(
        why.contains("'reg.local:5000'") && why.contains("'reg.local_5000_'"),
        "{why}"
    );
}

#[test]
fn hosts_toml_is_read_as_containerd_reads_it() {
    // hosts.go parseHostConfig: "/v2" appended unless the path ends with it or override_path;
    // capabilities default to all; hosts in file order, then the server (parseHostsFile).
    let text = "server = \"https://quay.io\"\n\n\
        [host.\"https://b.example.com/prefix\"]\n  capabilities = [\"pull\"]\n\n\
        [host.\"a.example.com:5000/v2/ocp4\"]\n  capabilities = [\"pull\", \"resolve\"]\n  override_path = true\n\n\
        [host.\"http://c.example.com\"]\n";
    let file = parse(Path::new("quay.io/hosts.toml"), text).unwrap();
    let got: Vec<(String, Vec<&str>)> = file
        .hosts
        .iter()
        .map(|h| (h.base(), h.capabilities.names()))
        .collect();
    assert_eq!(
        got,
        [
            ("https://b.example.com/prefix/v2".to_string(), vec!["pull"]),
            (
                "https://a.example.com:5000/v2/ocp4".to_string(),
                vec!["pull", "resolve"]
            ),
            (
                "http://c.example.com/v2".to_string(),
                vec!["pull", "resolve", "push"]
            ),
        ]
    );
    assert_eq!(file.server.unwrap().base(), "https://quay.io/v2");
    // hosts.go hostDirectory: ":port" is "_port_" in a folder name.
    for (folder, want) in [
        ("quay.io", Some("quay.io")),
        ("reg.local_5000_", Some("reg.local:5000")),
        ("reg.local:5000", Some("reg.local:5000")),
        ("_default", None),
        ("a_b_", Some("a_b_")),
    ] {
        assert_eq!(folder_host(folder).as_deref(), want, "{folder}");
    }
}

#[test]
fn a_hosts_directory_is_looked_up_by_host_then_default() {
    let dir = tempfile::tempdir().unwrap();
    let write = |folder: &str, text: &str| {
        std::fs::create_dir_all(dir.path().join(folder)).unwrap();
        std::fs::write(dir.path().join(folder).join("hosts.toml"), text).unwrap();
    };
    write(
        "reg.local_5000_",
        "server = \"https://reg.local:5000\"\n[host.\"https://m.local/v2/port\"]\n  override_path = true\n",
    );
    write(
        "_default",
        "[host.\"https://cache.local\"]\n  capabilities = [\"pull\"]\n",
    );
    let config = read(dir.path()).unwrap();
    assert_eq!(
        requests(&config, &format!("reg.local:5000/a/b@{D}")),
        [
            (M, format!("https://m.local/v2/port/a/b/manifests/{D}")),
            (S, format!("https://reg.local:5000/v2/a/b/manifests/{D}")),
        ]
    );
    assert_eq!(
        requests(&config, &format!("quay.io/x/y@{D}")),
        [
            (M, format!("https://cache.local/v2/x/y/manifests/{D}")),
            (S, format!("https://quay.io/v2/x/y/manifests/{D}")),
        ]
    );
}

#[test]
fn hosts_toml_containerd_rejects_is_refused_naming_file_entry_and_field() {
    // hosts.go parseHostConfig: unknown capability, unparsable URL; containerd logs the error
    // and ignores the whole file (loadHostDir), so the node pulls from the source.
    let cases = [
        (
            "[host.\"https://m.local\"]\n  capabilities = [\"pull\", \"fetch\"]\n",
            "[host.\"https://m.local\"]: capabilities: unknown capability 'fetch'",
            Some(1),
        ),
        (
            "[host.\"ftp://m.local\"]\n",
            "[host.\"ftp://m.local\"]: URL 'ftp://m.local': scheme 'ftp'",
            Some(1),
        ),
        ("server = 5\n", "server: not a string", Some(1)),
        (
            "[host.\"https://m.local\"]\n  override_path = \"yes\"\n",
            "override_path: not a boolean",
            Some(1),
        ),
        ("[host\n", "not valid TOML", Some(1)),
        ("[host.\"https:///v2\"]\n", "has no usable host", Some(1)),
    ];
    for (text, want, line) in cases {
        let err = parse(Path::new("d/m.local/hosts.toml"), text).unwrap_err();
        let shown = err.to_string();
        assert!(shown.starts_with("d/m.local/hosts.toml"), "{shown}");
        assert!(shown.contains(want), "{text}: {shown}");
        assert_eq!(err.line, line, "{text}: {shown}");
    }
}
