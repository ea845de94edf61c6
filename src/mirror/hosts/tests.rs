//! One row per rule of the Windows pull path, each citing the WMCO or containerd file and
//! function it follows (issue 20). Each row: mirror sets (or a hosts.toml), a reference, and
//! the manifest requests a Windows node makes, in order, with their kind.

use std::path::Path;

use super::containerd::{AttemptKind, HostsReader, attempts, object};
use super::dir::{parse, read};
use super::model::{ConfiguredBy, HostsConfig, host_paths};
use super::wmco::{render, truncate};
use crate::mirror::config::MirrorConfig;
use crate::mirror::testing::reg;
use crate::platform::RuntimeProfile;

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

/// The requests of a Windows node for `reference` under `config`: `(kind, url)`, its
/// containerd reading the files as `reader`.
fn requests_by(
    config: &HostsConfig,
    reference: &str,
    reader: HostsReader,
) -> Vec<(AttemptKind, String)> {
    let r = reg(reference);
    attempts(config, &r, (r.digest.is_some(), &object(&r)), reader)
        .into_iter()
        .map(|a| (a.kind, a.url))
        .collect()
}

/// [`requests_by`] a containerd 1.7 node, as WMCO ships it (a file without a `host` table is
/// ignored: no row below is about that).
fn requests(config: &HostsConfig, reference: &str) -> Vec<(AttemptKind, String)> {
    requests_by(config, reference, HostsReader::IgnoresServerOnly)
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
    // hosts.go hostDirectory (":port" is "_port_", from the last ':'); config_windows.go
    // hostPaths (containerd 1.7): every ':' taken out of the names, then _default.
    for (registry, want) in [
        ("quay.io", vec!["quay.io", "_default"]),
        (
            "reg.local:5000",
            vec!["reg.local_5000_", "reg.local5000", "_default"],
        ),
        ("[::1]:5000", vec!["[1]_5000_", "[1]5000", "_default"]),
    ] {
        assert_eq!(host_paths(registry), want, "{registry}");
    }
}

#[test]
fn a_hosts_directory_is_looked_up_by_the_first_folder_that_exists() {
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

/// Writes `files` (`folder/file` → text) under a new directory.
fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (path, text) in files {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    dir
}

#[test]
fn the_first_folder_that_exists_decides_with_or_without_a_hosts_toml() {
    let mirror = "[host.\"https://m.local\"]\n  capabilities = [\"pull\"]\n";
    let default = "[host.\"https://cache.local\"]\n  capabilities = [\"pull\"]\n";
    let src = |host: &str| (S, format!("https://{host}/v2/a/b/manifests/{D}"));
    let cache = (M, format!("https://cache.local/v2/a/b/manifests/{D}"));
    let m = (M, format!("https://m.local/v2/a/b/manifests/{D}"));
    // (rule and source cited, files, reference's registry, requests)
    type Files<'a> = Vec<(&'a str, &'a str)>;
    type Requests = Vec<(AttemptKind, String)>;
    let cases: Vec<(&str, Files, &str, Requests)> = vec![
        (
            "hosts.go HostDirFromRoot: the first folder that exists; loadHostDir: no hosts.toml \
             is loadCertFiles, one host without a URL: the registry itself, not _default",
            vec![("quay.io/ca.crt", "x"), ("_default/hosts.toml", default)],
            "quay.io",
            vec![src("quay.io")],
        ),
        (
            "loadHostDir: an empty hosts.toml (len(b) == 0) is loadCertFiles too",
            vec![("quay.io/hosts.toml", ""), ("_default/hosts.toml", default)],
            "quay.io",
            vec![src("quay.io")],
        ),
        (
            "config_windows.go hostPaths: host_port_ first, then hostport",
            vec![
                ("reg.local_5000_/ca.crt", "x"),
                ("reg.local5000/hosts.toml", mirror),
            ],
            "reg.local:5000",
            vec![src("reg.local:5000")],
        ),
        (
            "config_windows.go hostPaths: the host with ':' taken out",
            vec![("reg.local5000/hosts.toml", mirror)],
            "reg.local:5000",
            vec![m.clone(), src("reg.local:5000")],
        ),
        (
            "config_windows.go hostPaths: a folder named host:port is never looked up",
            vec![
                ("reg.local:5000/hosts.toml", mirror),
                ("_default/hosts.toml", default),
            ],
            "reg.local:5000",
            vec![cache.clone(), src("reg.local:5000")],
        ),
        (
            "config_windows.go hostPaths: _default when no folder of the host exists",
            vec![
                ("other.io/hosts.toml", mirror),
                ("_default/hosts.toml", default),
            ],
            "quay.io",
            vec![cache, src("quay.io")],
        ),
    ];
    for (rule, files, registry, want) in cases {
        let dir = tree(&files);
        let config = read(dir.path()).unwrap();
        assert_eq!(
            requests(&config, &format!("{registry}/a/b@{D}")),
            want,
            "{rule}"
        );
    }
}

#[test]
fn a_folder_or_hosts_toml_containerd_cannot_read_is_refused_naming_it() {
    use std::os::unix::fs::symlink;
    // hosts.go HostDirFromRoot (os.Stat: an error other than "does not exist" fails the
    // resolver) and loadHostDir (os.ReadFile: likewise): every pull from the host fails.
    type Make = Box<dyn Fn(&Path)>;
    let make: Vec<(&str, &str, Make)> = vec![
        (
            "a file, not a directory",
            "quay.io",
            Box::new(|d: &Path| std::fs::write(d.join("quay.io"), "x").unwrap()),
        ),
        (
            "a directory, not a file",
            "quay.io/hosts.toml",
            Box::new(|d: &Path| std::fs::create_dir_all(d.join("quay.io/hosts.toml")).unwrap()),
        ),
        (
            "a device, not a file",
            "quay.io/hosts.toml",
            Box::new(|d: &Path| {
                std::fs::create_dir(d.join("quay.io")).unwrap();
                symlink("/dev/zero", d.join("quay.io/hosts.toml")).unwrap();
            }),
        ),
        (
            "a FIFO, not a file",
            "_default/hosts.toml",
            Box::new(|d: &Path| {
                std::fs::create_dir(d.join("_default")).unwrap();
                let made = std::process::Command::new("mkfifo")
                    .arg(d.join("_default/hosts.toml"))
                    .status()
                    .unwrap();
                assert!(made.success());
            }),
        ),
        (
            "cannot be read",
            "quay.io/hosts.toml",
            Box::new(|d: &Path| {
                std::fs::create_dir(d.join("quay.io")).unwrap();
                symlink("loop", d.join("quay.io/loop")).unwrap();
                symlink("loop", d.join("quay.io/hosts.toml")).unwrap();
            }),
        ),
    ];
    for (what, file, make) in make {
        let dir = tempfile::tempdir().unwrap();
        make(dir.path());
        let shown = read(dir.path()).unwrap_err().to_string();
        let path = dir.path().join(file).display().to_string();
        assert!(
            shown.starts_with(&path) && shown.contains(what) && shown.contains("every pull"),
            "{what}: {shown}"
        );
    }
    // A dangling link is a folder that does not exist (os.Stat: IsNotExist): the next one.
    let dir = tree(&[("_default/hosts.toml", "[host.\"https://cache.local\"]\n")]);
    symlink("nowhere", dir.path().join("quay.io")).unwrap();
    let config = read(dir.path()).unwrap();
    assert_eq!(
        requests(&config, &format!("quay.io/a/b@{D}")),
        [
            (M, format!("https://cache.local/v2/a/b/manifests/{D}")),
            (S, format!("https://quay.io/v2/a/b/manifests/{D}")),
        ]
    );
}

#[test]
fn mistyped_ca_client_and_header_are_refused_as_containerd_refuses_them() {
    // hosts.go parseHostConfig's type switches: `ca` string or []string; `client` string,
    // []string or [][2]string; header values string or []string (makeStringSlice); a
    // `header` that is not a table fails tree.Unmarshal.
    let entry = |body: &str| format!("[host.\"https://m.local\"]\n{body}\n");
    let cases = [
        (entry("ca = 5"), Some("ca: not a path or a list of paths")),
        (entry("ca = [\"a.pem\", 5]"), Some("ca[1]: not a string")),
        (entry("ca = {a = 1}"), Some("ca: not a path")),
        (entry("client = true"), Some("client: not a path or a list")),
        (
            entry("client = [[\"c.pem\"]]"),
            Some("client[0]: not a pair"),
        ),
        (
            entry("client = [[\"c\", \"k\", \"x\"]]"),
            Some("client[0]: not a pair"),
        ),
        (
            entry("client = [[\"c\", 1]]"),
            Some("client[0]: not a pair"),
        ),
        (
            entry("client = [{a = 1}]"),
            Some("client[0]: not a path or a pair"),
        ),
        (entry("header = \"x\""), Some("header: not a table")),
        (
            entry("[host.\"https://m.local\".header]\n  x-a = 1"),
            Some("header 'x-a'"),
        ),
        (entry("header = {x-a = [\"v\", 2]}"), Some("header 'x-a'")),
        // What containerd takes.
        (entry("ca = \"a.pem\""), None),
        (entry("ca = [\"a.pem\", \"b.pem\"]"), None),
        (entry("client = \"c.pem\""), None),
        (entry("client = [\"c.pem\", [\"c.cert\", \"c.key\"]]"), None),
        (entry("header = {x-a = \"v\", x-b = [\"v\", \"w\"]}"), None),
        // The top level is checked whether or not `server` is set (parseHostsFile).
        ("ca = 5\n".to_string(), Some("top level: ca: not a path")),
        (
            "server = \"https://s.local\"\nclient = 1\n".to_string(),
            Some("server: client"),
        ),
    ];
    for (text, want) in cases {
        let got = parse(Path::new("d/m.local/hosts.toml"), &text);
        match want {
            None => assert!(got.is_ok(), "{text}: {:?}", got.err()),
            Some(want) => {
                let shown = got.unwrap_err().to_string();
                assert!(shown.starts_with("d/m.local/hosts.toml"), "{shown}");
                assert!(shown.contains(want), "{text}: {shown}");
            }
        }
    }
}

#[test]
fn credentials_queries_and_fragments_of_host_urls_are_dropped_and_never_printed() {
    // hosts.go parseHostConfig: url.Parse, then u.Scheme, u.Host (no user information) and
    // u.Path; the query and fragment are not kept.
    let text = "server = \"https://u:s3cret@s.local/base?token=s3cret#s3cret\"\n\
        [host.\"u:s3cret@m.local:5000/v2/ocp?sig=s3cret\"]\n  override_path = true\n\
        [host.\"http://m2.local#s3cret\"]\n";
    let file = parse(Path::new("q/hosts.toml"), text).unwrap();
    let bases: Vec<String> = file.hosts.iter().map(|h| h.base()).collect();
    assert_eq!(bases, ["https://m.local:5000/v2/ocp", "http://m2.local/v2"]);
    assert_eq!(file.server.unwrap().base(), "https://s.local/base/v2");
    // Refused files name the URL without them.
    for text in [
        "[host.\"https://u:s3cret@m.local?x=s3cret\"]\n  capabilities = [\"fetch\"]\n",
        "[host.\"ftp://u:s3cret@m.local#s3cret\"]\n",
        "[host.\"https://u:s3cret@m.local:port\"]\n",
        "server = \"https://u:s3cret@?s3cret\"\n",
    ] {
        let shown = parse(Path::new("q/hosts.toml"), text)
            .unwrap_err()
            .to_string();
        assert!(!shown.contains("s3cret"), "{shown}");
        assert!(shown.contains("<redacted>"), "{shown}");
    }
}

#[test]
fn a_hosts_toml_without_a_host_table_is_read_as_each_containerd_release_reads_it() {
    // containerd#10027: a file with `server` (or other top-level fields) and no `host` table.
    let v1 = "containerd 1.5 – 1.7.31 remotes/docker/config/hosts.go getSortedHosts (go-toml v1: \
              root.Get(\"host\") is no *toml.Tree: \"invalid `host` tree\"); loadHostDir logs \
              it and falls back to loadCertFiles: the registry itself";
    let v2 = "containerd 1.7.32 (containerd#10028), 2.x core/remotes/docker/config/hosts.go \
              getSortedHosts (go-toml/v2 parser: no [host.X] header, no hosts); parseHostsFile \
              appends the server";
    let server = "server = \"https://cache.local\"\n";
    let empty_table = "server = \"https://cache.local\"\n[host]\n";
    let ca_only = "ca = \"ca.pem\"\n";
    let src = (S, format!("https://quay.io/v2/a/b/manifests/{D}"));
    let cache = (M, format!("https://cache.local/v2/a/b/manifests/{D}"));
    use HostsReader::{IgnoresServerOnly as Old, ReadsServerOnly as New};
    type Case<'a> = (&'a str, HostsReader, &'a str, Vec<(AttemptKind, String)>);
    let cases: Vec<Case> = vec![
        (v1, Old, server, vec![src.clone()]),
        (v2, New, server, vec![cache.clone()]),
        (
            "hosts.go getSortedHosts (go-toml v1): an empty [host] is a tree without keys \
             (containerd#10027's workaround)",
            Old,
            empty_table,
            vec![cache.clone()],
        ),
        (v2, New, empty_table, vec![cache]),
        (v1, Old, ca_only, vec![src.clone()]),
        (
            "ConfigureHosts: a last host without a URL is the registry itself",
            New,
            ca_only,
            vec![src],
        ),
    ];
    for (source, reader, text, want) in cases {
        let dir = tree(&[("quay.io/hosts.toml", text)]);
        let config = read(dir.path()).unwrap();
        let got = requests_by(&config, &format!("quay.io/a/b@{D}"), reader);
        assert_eq!(got, want, "{source}: {text}");
    }
    // Which profile reads how: every release a row covers must read the file as said.
    let rows = [
        // Every release these rows cover is older than 1.7.32.
        ("containerd-1.4", Some(Old)),
        ("containerd-1.5", Some(Old)),
        ("containerd-1.6.0", Some(Old)),
        ("containerd-1.6", Some(Old)),
        // 1.7.0 – 1.7.31 ignore it; the row covers them.
        ("containerd-1.7", Some(Old)),
        ("containerd-2.0", Some(New)),
        ("containerd-2.2", Some(New)),
        ("containerd-2.3", Some(New)),
        ("containerd-next", Some(New)),
        // Docker Engine and CRI-O read no hosts.toml.
        ("docker-19.03", None),
        ("cri-o", None),
    ];
    for (name, want) in rows {
        let profile: RuntimeProfile = name.parse().unwrap();
        assert_eq!(HostsReader::of(profile), want, "{name}");
    }
    let nodes = [
        RuntimeProfile::CONTAINERD_2_0,
        RuntimeProfile::CONTAINERD_1_7,
    ];
    assert_eq!(
        HostsReader::of_nodes(&nodes),
        (Old, vec![RuntimeProfile::CONTAINERD_1_7])
    );
    assert_eq!(HostsReader::of_nodes(&nodes[..1]), (New, vec![]));
}
