use super::*;

fn sets(text: &str) -> Result<MirrorConfig, MirrorConfigError> {
    let mut c = MirrorConfig::default();
    c.add_mirror_sets(Path::new("sets.yaml"), text)?;
    Ok(c)
}

fn conf(text: &str) -> Result<MirrorConfig, MirrorConfigError> {
    let mut c = MirrorConfig::default();
    c.add_registries_conf(Path::new("registries.conf"), text)?;
    Ok(c)
}

/// Issue 22, item 4: a registries.conf nesting brackets deeper than any real one is
/// refused by the guard every YAML, JSON and TOML input goes through, naming the line and
/// the nesting (the TOML parser's own error quoted the whole line back).
#[test]
fn deep_nesting_in_registries_conf_is_refused_by_the_input_guard() {
    let text = format!(
        "[[registry]]\nlocation = \"quay.io\"\n\nunqualified-search-registries = {}{}\n",
        "[".repeat(200),
        "]".repeat(200)
    );
    let e = conf(&text).unwrap_err().to_string();
    assert!(
        e.starts_with("registries.conf:4: line 4: nested more than 64 levels"),
        "{}",
        &e[..e.len().min(300)]
    );
}

/// Issue 22, item 9: YAML merge keys in mirror sets are applied as kubectl applies them.
#[test]
fn merge_keys_in_mirror_sets_are_applied() {
    let text = format!(
        "{IDMS_HEAD}  - &m {{source: quay.io/a, mirrors: [m.local/a]}}\n  - <<: *m\n    source: quay.io/b\n"
    );
    let c = sets(&text).unwrap();
    let got: Vec<(&str, &str)> = c
        .registries()
        .map(|r| (r.prefix.as_str(), r.mirrors[0].location.as_str()))
        .collect();
    assert_eq!(
        got,
        [("quay.io/a", "m.local/a"), ("quay.io/b", "m.local/a")]
    );
}

/// As oc-mirror v2 writes it (`status: {}`, a null creationTimestamp).
const IDMS_HEAD: &str = "apiVersion: config.openshift.io/v1\nkind: ImageDigestMirrorSet\nmetadata:\n  creationTimestamp: null\n  name: x\nstatus: {}\nspec:\n  imageDigestMirrors:\n";

#[test]
fn oc_mirror_output_merges_documents_and_lists() {
    let text = format!(
        "{IDMS_HEAD}  - source: quay.io/org\n    mirrors: [m1.local/org]\n---\n\
         {IDMS_HEAD}  - source: quay.io/org\n    mirrors: [m2.local/org, m1.local/org]\n    mirrorSourcePolicy: NeverContactSource\n---\n\
         apiVersion: v1\nkind: List\nitems:\n- apiVersion: config.openshift.io/v1\n  kind: ImageTagMirrorSet\n  metadata: {{name: t}}\n  spec:\n    imageTagMirrors:\n    - source: quay.io/org/\n      mirrors: [t.local/org/]\n---\n"
    );
    let c = sets(&text).unwrap();
    let regs: Vec<&Registry> = c.registries().collect();
    assert_eq!(regs.len(), 1);
    let r = regs[0];
    assert_eq!(r.prefix, "quay.io/org");
    assert!(
        r.blocked,
        "NeverContactSource on any entry blocks the source (runtime-utils addMirrorSets)"
    );
    let got: Vec<(&str, PullFrom)> = r
        .mirrors
        .iter()
        .map(|m| (m.location.as_str(), m.pull_from))
        .collect();
    // [m1] and [m2, m1]: m2 before m1 (runtime-utils topoSortRepos), then the tag mirrors.
    assert_eq!(
        got,
        [
            ("m2.local/org", PullFrom::DigestOnly),
            ("m1.local/org", PullFrom::DigestOnly),
            ("t.local/org", PullFrom::TagOnly),
        ]
    );
    assert!(r.mirrors[0].origin.contains("ImageDigestMirrorSet x"));
}

/// Issue 32, item 3: an ImageDigestMirrorSet without entries (an empty, null or absent
/// `imageDigestMirrors`, openshift/api `+optional`) is a configuration without mirrors.
#[test]
fn a_mirror_set_without_entries_configures_no_mirror() {
    for spec in [
        "spec:\n  imageDigestMirrors: []\n",
        "spec:\n  imageDigestMirrors:\n",
        "spec: {}\n",
    ] {
        let c = sets(&format!("apiVersion: config.openshift.io/v1\nkind: ImageDigestMirrorSet\nmetadata: {{name: e}}\n{spec}")).unwrap();
        assert!(c.is_empty() && c.mirror_sets().is_empty(), "{spec}");
    }
}

fn icsp(entries: &str) -> String {
    format!(
        "apiVersion: operator.openshift.io/v1alpha1\nkind: ImageContentSourcePolicy\nmetadata: {{name: i}}\nspec:\n  repositoryDigestMirrors:\n{entries}---\n"
    )
}

fn idms(entries: &str) -> String {
    format!("{IDMS_HEAD}{entries}---\n")
}

fn itms(entries: &str) -> String {
    format!(
        "apiVersion: config.openshift.io/v1\nkind: ImageTagMirrorSet\nmetadata: {{name: t}}\nspec:\n  imageTagMirrors:\n{entries}---\n"
    )
}

/// One entry for source `S` (`quay.io/openshift-release-dev/ocp-v4.0-art-dev`).
fn entry(mirrors: &str, policy: &str) -> String {
    let policy = match policy {
        "" => String::new(),
        p => format!("    mirrorSourcePolicy: {p}\n"),
    };
    format!("  - source: {S}\n    mirrors: [{mirrors}]\n{policy}")
}

const S: &str = "quay.io/openshift-release-dev/ocp-v4.0-art-dev";

/// (rule and source cited, mirror sets, the registry entry of `S`: its mirrors with the
/// pulls they serve and whether the source is blocked; `None`: no entry)
type LinuxRow = (
    &'static str,
    String,
    Option<(Vec<(&'static str, PullFrom)>, bool)>,
);

/// Each row's mirror sets give the registry entry of `S` it says (issue 32, item 5: a
/// Linux node's registries.conf entry for one source, merged from every IDMS, ITMS and
/// ICSP entry as the Machine Config Operator merges them; each row cites the
/// openshift/runtime-utils file and function that decides it).
fn assert_linux_rows(cases: Vec<LinuxRow>) {
    for (rule, yaml, want) in cases {
        let c = sets(&yaml).unwrap_or_else(|e| panic!("{rule}: {e}"));
        let got = c.registries().find(|r| r.prefix == S).map(|r| {
            let mirrors: Vec<(&str, PullFrom)> = r
                .mirrors
                .iter()
                .map(|m| (m.location.as_str(), m.pull_from))
                .collect();
            (mirrors, r.blocked)
        });
        assert_eq!(got, want, "{rule}");
    }
}

use PullFrom::{DigestOnly as Dig, TagOnly as Tag};

#[test]
fn linux_interleaves_the_mirror_lists_of_one_source() {
    let cases: Vec<LinuxRow> = vec![
        (
            "pkg/registries/registries.go topoSortRepos + topo.go topoGraph.Sorted: ICSP and \
             IDMS mirrors of one source in one graph, interleaved (issue 32's example)",
            icsp(&entry(
                "mirror.example.com:5000/mirrors/ocp-v4.0-art-dev, mirror.example.net/ocp4/openshift4",
                "",
            )) + &idms(&entry(
                "mirror.example.net/x/y/z/ocp-v4.0-art-dev, mirror.example.net/openshift-release-dev/ocp-v4.0-art-dev",
                "",
            )),
            Some((
                vec![
                    ("mirror.example.com:5000/mirrors/ocp-v4.0-art-dev", Dig),
                    ("mirror.example.net/x/y/z/ocp-v4.0-art-dev", Dig),
                    ("mirror.example.net/ocp4/openshift4", Dig),
                    (
                        "mirror.example.net/openshift-release-dev/ocp-v4.0-art-dev",
                        Dig,
                    ),
                ],
                false,
            )),
        ),
        (
            "pkg/registries/registries.go mergedDigestMirrorSets: (B, C) and (A, B) give \
             (A, B, C): each entry's order kept where they agree",
            idms(&entry("b.local/r, c.local/r", "")) + &idms(&entry("a.local/r, b.local/r", "")),
            Some((
                vec![("a.local/r", Dig), ("b.local/r", Dig), ("c.local/r", Dig)],
                false,
            )),
        ),
        (
            "pkg/registries/topo.go topoGraph.Sorted: mirrors no entry orders are taken by \
             name (the queue is seeded in name order), not in document order",
            idms(&entry("z.local/r", "")) + &idms(&entry("a.local/r", "")),
            Some((vec![("a.local/r", Dig), ("z.local/r", Dig)], false)),
        ),
        (
            "pkg/registries/topo.go topoGraph.Sorted: queued nodes come out first in, first \
             out: a1's successor a2 waits behind b1, queued before it",
            idms(&entry("a1.local/r, a2.local/r", "")) + &idms(&entry("b1.local/r", "")),
            Some((
                vec![
                    ("a1.local/r", Dig),
                    ("b1.local/r", Dig),
                    ("a2.local/r", Dig),
                ],
                false,
            )),
        ),
    ];
    assert_linux_rows(cases);
}

#[test]
fn linux_breaks_cycles_by_name_and_keeps_a_listed_source() {
    let cases: Vec<LinuxRow> = vec![
        (
            "pkg/registries/topo.go topoGraph.Sorted: lists that disagree (a cycle) are broken \
             at the first unused mirror by name (registries_test.go, \"Example\")",
            idms(&entry("m1.local/r, m2.local/r", ""))
                + &idms(&entry("l2.local/r, m2.local/r, m1.local/r", "")),
            Some((
                vec![
                    ("l2.local/r", Dig),
                    ("m1.local/r", Dig),
                    ("m2.local/r", Dig),
                ],
                false,
            )),
        ),
        (
            "pkg/registries/topo.go topoGraph.Sorted: the cycle is broken at the first unused \
             node by name, the source included: here the source sorts before r1, so it is \
             tried before r1 and r2; topoSortRepos drops it only when it comes last",
            idms(&entry("r1.local/r, r2.local/r", ""))
                + &idms(&entry("local2.local/r, r2.local/r, r1.local/r", "")),
            Some((
                vec![
                    ("local2.local/r", Dig),
                    (S, Dig),
                    ("r1.local/r", Dig),
                    ("r2.local/r", Dig),
                ],
                false,
            )),
        ),
        (
            "pkg/registries/registries.go topoSortRepos: a list naming the source gets no edge \
             to it; the source stays a mirror unless it comes last",
            idms(&entry(&format!("z1.local/r, {S}, y2.local/r"), ""))
                + &idms(&entry(&format!("{S}, y2.local/r, x3.local/r"), "")),
            Some((
                vec![
                    ("z1.local/r", Dig),
                    (S, Dig),
                    ("y2.local/r", Dig),
                    ("x3.local/r", Dig),
                ],
                false,
            )),
        ),
    ];
    assert_linux_rows(cases);
}

#[test]
fn linux_skips_entries_without_mirrors_and_blocks_on_any_never_contact_source() {
    let cases: Vec<LinuxRow> = vec![
        (
            "pkg/registries/registries.go addMirrorSets: an entry without a mirror other than \
             its source is no mirror set, its NeverContactSource ignored",
            idms(&format!(
                "  - source: {S}\n    mirrorSourcePolicy: NeverContactSource\n"
            )) + &idms(&entry(S, "NeverContactSource")),
            None,
        ),
        (
            "pkg/registries/registries.go addMirrorSets + updateRegistry: NeverContactSource on \
             any entry kept blocks the source",
            idms(&entry("a.local/r", "")) + &idms(&entry("b.local/r", "NeverContactSource")),
            Some((vec![("a.local/r", Dig), ("b.local/r", Dig)], true)),
        ),
        (
            "pkg/registries/registries.go EditRegistriesConfig: digest mirrors (IDMS + ICSP) \
             first, then the tag mirrors (ITMS) merged on their own; updateRegistry: the ITMS \
             entry's NeverContactSource blocks the source for every pull",
            itms(&entry("t.local/r", "NeverContactSource"))
                + &icsp(&entry("i.local/r", ""))
                + &idms(&entry("d.local/r", "")),
            Some((
                vec![("d.local/r", Dig), ("i.local/r", Dig), ("t.local/r", Tag)],
                true,
            )),
        ),
        (
            "pkg/registries/registries.go mergedDigestMirrorSets: two IDMS entries and an ICSP \
             entry of one source, one graph (registries_test.go, \"imageContentSourcePolicy+\
             imageDigestMirrorSet Confict\")",
            idms(&format!(
                "{}{}",
                entry("o.local/o1", ""),
                entry("o.local/o3", "")
            )) + &icsp(&entry("o.local/o2", "")),
            Some((
                vec![
                    ("o.local/o1", Dig),
                    ("o.local/o2", Dig),
                    ("o.local/o3", Dig),
                ],
                false,
            )),
        ),
    ];
    assert_linux_rows(cases);
}

/// runtime-utils skips an entry without mirrors: a more specific source without mirrors
/// does not hide the mirrors of the less specific one.
#[test]
fn an_entry_without_mirrors_does_not_shadow_a_shorter_prefix() {
    let c = sets(&idms(
        "  - source: quay.io/org\n    mirrors: [m.local/org]\n  - source: quay.io/org/sub\n",
    ))
    .unwrap();
    let prefixes: Vec<&str> = c.registries().map(|r| r.prefix.as_str()).collect();
    assert_eq!(prefixes, ["quay.io/org"]);
}

#[test]
fn drop_ins_replace_entries_by_prefix_in_name_order() {
    let dir = tempfile::tempdir().unwrap();
    let main = dir.path().join("registries.conf");
    std::fs::write(
        &main,
        "[[registry]]\nlocation = \"quay.io/org\"\n[[registry.mirror]]\nlocation = \"main.local/org\"\n\
         [[registry]]\nlocation = \"quay.io/other\"\n[[registry.mirror]]\nlocation = \"keep.local/other\"\n",
    )
    .unwrap();
    let d = dir.path().join("registries.conf.d");
    std::fs::create_dir(&d).unwrap();
    std::fs::write(
        d.join("20-late.conf"),
        "[[registry]]\nlocation = \"quay.io/org\"\n[[registry.mirror]]\nlocation = \"late.local/org\"\n",
    )
    .unwrap();
    std::fs::write(
        d.join("10-early.conf"),
        "[[registry]]\nlocation = \"quay.io/org\"\n[[registry.mirror]]\nlocation = \"early.local/org\"\n",
    )
    .unwrap();
    std::fs::write(d.join("README"), "not a drop-in").unwrap();
    let mut c = MirrorConfig::default();
    c.add_registries_conf_file(&main).unwrap();
    let locs: Vec<(String, String)> = c
        .registries()
        .map(|r| (r.prefix.clone(), r.mirrors[0].location.clone()))
        .collect();
    assert_eq!(
        locs,
        [
            ("quay.io/org".to_string(), "late.local/org".to_string()),
            ("quay.io/other".to_string(), "keep.local/other".to_string()),
        ]
    );
}

/// Issue 33, item 14: containers/image `dropInConfigs` reads every `*.conf` drop-in that
/// is not a directory entry, links included, and `tryUpdatingCache` fails on one it
/// cannot load (skipping only one that does not exist): a FIFO, a device or a directory
/// behind a link is refused before it is opened (never blocking), naming it; a dangling
/// link and a real sub-directory are passed over as CRI-O passes them.
#[test]
fn drop_ins_that_are_not_regular_files_are_refused_before_they_are_opened() {
    use std::os::unix::fs::symlink;
    let entry = "[[registry]]\nlocation = \"quay.io/org\"\n[[registry.mirror]]\nlocation = \"m.local/org\"\n";
    let fifo = |p: &Path| {
        let made = std::process::Command::new("mkfifo").arg(p).status();
        assert!(made.unwrap().success());
    };
    type Make = Box<dyn Fn(&Path)>;
    let cases: Vec<(&str, Make, Option<&str>)> = vec![
        (
            "fifo.conf",
            Box::new(fifo),
            Some("a FIFO, not a regular file"),
        ),
        (
            "zero.conf",
            Box::new(|p: &Path| symlink("/dev/zero", p).unwrap()),
            Some("a device, not a regular file"),
        ),
        (
            "dir.conf",
            Box::new(|p: &Path| symlink(p.parent().unwrap(), p).unwrap()),
            Some("a directory, not a regular file"),
        ),
        (
            "loop.conf",
            Box::new(|p: &Path| symlink(p, p).unwrap()),
            Some("cannot be read"),
        ),
        (
            "gone.conf",
            Box::new(|p: &Path| symlink("nowhere", p).unwrap()),
            None,
        ),
        (
            "sub.conf",
            Box::new(|p: &Path| std::fs::create_dir(p).unwrap()),
            None,
        ),
    ];
    for (name, make, want) in cases {
        let dir = tempfile::tempdir().unwrap();
        let main = dir.path().join("registries.conf");
        std::fs::write(&main, entry).unwrap();
        let d = dir.path().join("registries.conf.d");
        std::fs::create_dir(&d).unwrap();
        make(&d.join(name));
        let got = MirrorConfig::default().add_registries_conf_file(&main);
        match want {
            None => assert!(got.is_ok(), "{name}: {:?}", got.err()),
            Some(want) => {
                let shown = got.unwrap_err().to_string();
                let path = d.join(name).display().to_string();
                assert!(shown.starts_with(&path) && shown.contains(want), "{shown}");
            }
        }
    }
}

/// Issue 33, item 14: a location or mirror with user information is refused, and the
/// password never printed (containers/image `parseLocation` takes it; the pull reference
/// made of it does not parse).
#[test]
fn credentials_in_locations_are_refused_and_never_printed() {
    let cases = [
        "[[registry]]\nlocation = \"u:s3cret@quay.io/org\"\n",
        "[[registry]]\nlocation = \"quay.io/org\"\n[[registry.mirror]]\nlocation = \"u:s3cret@m.local/org\"\n",
        "[[registry]]\nlocation = \"https://u:s3cret@quay.io/org?token=s3cret\"\n",
        "[[registry]]\nprefix = \"u:s3cret@quay.io\"\nlocation = \"quay.io\"\n",
    ];
    for text in cases {
        let err = conf(text).unwrap_err();
        let shown = chain(&err);
        assert!(!shown.contains("s3cret"), "{shown}");
        assert!(shown.contains("<redacted>@"), "{shown}");
    }
    let err = chain(&conf(cases[0]).unwrap_err());
    assert!(err.contains("holds user information"), "{err}");
    let idms = "apiVersion: config.openshift.io/v1\nkind: ImageDigestMirrorSet\nmetadata: {name: d}\n\
                spec:\n  imageDigestMirrors:\n  - source: quay.io/org\n    mirrors: [u:s3cret@m.local/org]\n";
    let shown = chain(&sets(idms).unwrap_err());
    assert!(
        !shown.contains("s3cret") && shown.contains("<redacted>@"),
        "{shown}"
    );
}

/// The error's message and the messages of its causes, one a line, as the CLI prints them.
fn chain(err: &dyn std::error::Error) -> String {
    let mut shown = err.to_string();
    let mut cause = err.source();
    while let Some(c) = cause {
        shown.push_str(&format!("\n  caused by: {c}"));
        cause = c.source();
    }
    shown
}

/// `err`, refusing `text` read as `file`, names the file, says `want` (in its message or a
/// cause's) and, when given, the line.
fn assert_refused(file: &str, text: &str, err: MirrorConfigError, want: &str, line: Option<usize>) {
    let shown = chain(&err);
    assert!(err.to_string().starts_with(file), "{text}: {shown}");
    assert!(shown.contains(want), "{text}: want '{want}' in: {shown}");
    if line.is_some() {
        assert_eq!(err.line, line, "{text}: {shown}");
    }
}

#[test]
fn bad_mirror_sets_are_refused_naming_file_and_place() {
    let entry = |body: &str| format!("{IDMS_HEAD}  - source: {body}\n");
    let icsp = "apiVersion: operator.openshift.io/v1alpha1\nkind: ImageContentSourcePolicy\nspec:\n  repositoryDigestMirrors:\n  - source: \"*.quay.io\"\n    mirrors: [m.local]\n";
    // (text, what the message or a cause says, the line when known)
    let cases: &[(String, &str, Option<usize>)] = &[
        ("kind: Deployment\napiVersion: apps/v1\n".into(), "kind 'Deployment'", None),
        (
            "apiVersion: config.openshift.io/v1\nkind: ImageDigestMirrorSet\nspec: []\n".into(),
            "spec is not a mapping",
            None,
        ),
        (
            "apiVersion: config.openshift.io/v1\nkind: ImageDigestMirrorSet\nmetadata: {name: n}\n".into(),
            "ImageDigestMirrorSet 'n' has no spec",
            None,
        ),
        (
            "apiVersion: config.openshift.io/v1\nkind: ImageTagMirrorSet\nspec: {imageTagMirrors: 3}\n".into(),
            "spec.imageTagMirrors is not a list",
            None,
        ),
        (
            "apiVersion: v1alpha1\nkind: ImageDigestMirrorSet\nspec: {imageDigestMirrors: []}\n"
                .into(),
            "apiVersion config.openshift.io/v1",
            None,
        ),
        (entry("quay.io/org\n    mirror: [m.local]"), "unknown field `mirror`", None),
        (
            entry("quay.io/org\n    mirrors: [m.local]\n    mirrorSourcePolicy: Never"),
            "mirrorSourcePolicy 'Never'",
            None,
        ),
        (entry("https://quay.io/org\n    mirrors: [m.local]"), "URI schemes", None),
        (entry("quay.io/Org\n    mirrors: [m.local]"), "path component 'Org'", None),
        (entry("quay.io/org\n    mirrors: [\"*.m.local\"]"), "wildcards are not allowed", None),
        (entry("quay.io/org:v1\n    mirrors: [m.local]"), "must not contain a tag", None),
        (icsp.into(), "wildcards are not allowed", None),
        ("a: [unclosed\n".into(), "document 1", Some(2)),
        ("".into(), "no ImageDigestMirrorSet", None),
    ];
    for (text, want, line) in cases {
        assert_refused("sets.yaml", text, sets(text).unwrap_err(), want, *line);
    }
}

#[test]
fn bad_registries_conf_is_refused_naming_file_and_place() {
    let mirror = |pull_from: &str| {
        format!(
            "[[registry]]\nlocation = \"quay.io\"\n{pull_from}[[registry.mirror]]\nlocation = \"m.local\"\npull-from-mirror = "
        )
    };
    // (text, what the message or a cause says, the line when known)
    let cases: &[(String, &str, Option<usize>)] = &[
        (
            "[[registry]]\nlocation = \"quay.io\"\nmirror-by-digest = true\n".into(),
            "unknown field `mirror-by-digest`",
            Some(3),
        ),
        (
            "[registries.search]\nregistries = [\"quay.io\"]\n".into(),
            "v1 format",
            None,
        ),
        (
            "[[registry]]\nprefix = \"quay.io/org\"\n".into(),
            "location is unset",
            None,
        ),
        (
            "[[registry]]\nprefix = \"docker.io\"\nblocked = true\n".into(),
            "add location = \"docker.io\"",
            None,
        ),
        (
            mirror("mirror-by-digest-only = true\n") + "\"all\"\n",
            "cannot both be set",
            None,
        ),
        (mirror("") + "\"sometimes\"\n", "'sometimes'", None),
        (
            "[[registry]]\nlocation = \"https://quay.io\"\n".into(),
            "URI schemes",
            None,
        ),
        ("[[registry]\nlocation = 1\n".into(), "", Some(1)),
    ];
    for (text, want, line) in cases {
        assert_refused(
            "registries.conf",
            text,
            conf(text).unwrap_err(),
            want,
            *line,
        );
    }
}

#[test]
fn causes_are_kept_apart_from_the_message() {
    let mut c = MirrorConfig::default();
    let err = c
        .add_mirror_sets_file(Path::new("/nonexistent/idms.yaml"))
        .unwrap_err();
    assert_eq!(err.to_string(), "/nonexistent/idms.yaml: cannot be read");
    let cause = std::error::Error::source(&err).expect("the I/O error is kept");
    let io = cause
        .downcast_ref::<Arc<std::io::Error>>()
        .expect("an io::Error");
    assert_eq!(io.kind(), std::io::ErrorKind::NotFound);
    let err = conf("[[registry]]\nlocation = \"quay.io\"\nmirror-by-digest = true\n").unwrap_err();
    let cause = std::error::Error::source(&err).expect("the TOML error is kept");
    assert!(
        cause.downcast_ref::<Arc<toml::de::Error>>().is_some(),
        "{cause}"
    );
    assert!(!err.to_string().contains("unknown field"), "{err}");
    let err = sets(&format!("{IDMS_HEAD}  - source: quay.io/Org\n")).unwrap_err();
    let cause = std::error::Error::source(&err).expect("the scope error is kept");
    assert!(matches!(
        cause.downcast_ref::<ScopeError>(),
        Some(ScopeError::PathComponent(c)) if c == "Org"
    ));
}

#[test]
fn unreadable_files_name_the_path() {
    let mut c = MirrorConfig::default();
    let err = c
        .add_mirror_sets_file(Path::new("/nonexistent/idms.yaml"))
        .unwrap_err();
    assert!(
        err.to_string().starts_with("/nonexistent/idms.yaml: "),
        "{err}"
    );
    let err = c
        .add_registries_conf_file(Path::new("/nonexistent/registries.conf"))
        .unwrap_err();
    assert!(
        err.to_string().contains("/nonexistent/registries.conf"),
        "{err}"
    );
}
