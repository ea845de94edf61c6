//! `parse_modinfo` over module text as Go writes it (`runtime/debug/mod.go`, `BuildInfo.String`
//! and `ParseBuildInfo`; cmd/go's `modload` for what a `replace` records), and over mutated
//! text: never a panic, never more than `MAX_DEPS` kept.

use super::*;
use proptest::prelude::*;

fn parsed(text: &str) -> (GoBuildInfo, Vec<String>) {
    let mut info = GoBuildInfo::default();
    let mut problems = Vec::new();
    parse_modinfo(text, &mut info, &mut problems);
    (info, problems)
}

fn module(path: &str, version: &str, replace: Option<GoModule>) -> GoModule {
    GoModule {
        path: path.into(),
        version: version.into(),
        replace: replace.map(Box::new),
    }
}

/// A module text with a plain dep, a dep replaced by another module version and one replaced
/// by a directory (`go build` records the required version, then `=>` the directory with
/// version `(devel)` and no checksum; `BuildInfo.String` leaves the replaced dep's own
/// checksum column out).
const TEXT: &str = "path\texample.com/driver\n\
    mod\texample.com/driver\t(devel)\t\n\
    dep\tgithub.com/kubernetes-csi/csi-proxy/client\tv1.2.1\n\
    =>\t../stub\t(devel)\t\n\
    dep\tgolang.org/x/sys\tv0.1.0\th1:abc=\n\
    dep\tk8s.io/klog/v2\tv2.9.0\n\
    =>\tk8s.io/klog/v2\tv2.80.1\th1:def=\n\
    build\tGOOS=windows\n";

/// Rows: (what, text, deps expected, a problem that must be named or "").
#[test]
fn dep_and_replacement_lines() {
    let (info, problems) = parsed(TEXT);
    assert!(problems.is_empty(), "{problems:?}");
    assert_eq!(
        info.deps,
        vec![
            module(
                "github.com/kubernetes-csi/csi-proxy/client",
                "v1.2.1",
                Some(module("../stub", "(devel)", None))
            ),
            module("golang.org/x/sys", "v0.1.0", None),
            module(
                "k8s.io/klog/v2",
                "v2.9.0",
                Some(module("k8s.io/klog/v2", "v2.80.1", None))
            ),
        ]
    );
    assert_eq!(info.deps[0].built_version(), "v1.2.1");
    assert_eq!(info.deps[2].built_version(), "v2.80.1");
    assert_eq!(
        info.deps[0].describe(),
        "github.com/kubernetes-csi/csi-proxy/client v1.2.1 => ../stub"
    );
    assert_eq!(info.goos.as_deref(), Some("windows"));
    let rows: [(&str, &str, usize, &str); 6] = [
        (
            "main module replaced",
            "mod\tm\t(devel)\n=>\t../m\t(devel)\t\n",
            0,
            "",
        ),
        (
            "=> first",
            "=>\tx\tv1\t\n",
            0,
            "no module on the line before",
        ),
        (
            "=> after build",
            "dep\ta\tv1\nbuild\tGOOS=x\n=>\tb\tv2\t\n",
            1,
            "no module",
        ),
        ("one column", "dep\tonly\n", 0, "a dep line without 2 or 3"),
        (
            "four columns",
            "dep\ta\tv1\th\tx\n=>\ta\tv1\t\n",
            0,
            "a dep line",
        ),
        ("no newline at the end", "dep\ta\tv1\th1:x", 0, ""),
    ];
    for (what, text, deps, problem) in rows {
        let (info, problems) = parsed(text);
        assert_eq!(info.deps.len(), deps, "{what}: {info:?}");
        match problem.is_empty() {
            true => assert!(problems.is_empty(), "{what}: {problems:?}"),
            false => assert!(
                problems.iter().any(|p| p.contains(problem)),
                "{what}: {problems:?}"
            ),
        }
    }
}

/// Directory replacements as `golang.org/x/mod/modfile.IsDirectoryPath` tells them.
#[test]
fn directory_replacements() {
    for (path, dir) in [
        ("../stub", true),
        ("./stub", true),
        ("/src/stub", true),
        ("C:\\src\\stub", true),
        ("github.com/fork/client", false),
    ] {
        assert_eq!(module(path, "v1", None).is_directory(), dir, "{path}");
    }
}

/// More deps than kept: the first `MAX_DEPS`, and the rest counted.
#[test]
fn deps_are_bounded() {
    let text: String = (0..MAX_DEPS + 5)
        .map(|i| format!("dep\tm{i}\tv1.0.0\th1:x\n=>\tr{i}\tv2\t\n"))
        .collect();
    let (info, problems) = parsed(&text);
    assert_eq!(info.deps.len(), MAX_DEPS);
    assert_eq!(info.deps[MAX_DEPS - 1].built_version(), "v2");
    assert_eq!(
        problems,
        vec![format!(
            "Go build information: 5 module dependencies past the first {MAX_DEPS} not read"
        )]
    );
}

proptest! {
    /// Whatever edits: no panic, the bound holds, and every kept dep has a path.
    #[test]
    fn mutated_module_text(
        edits in proptest::collection::vec((any::<u16>(), prop_oneof![
            Just(b'\t'), Just(b'\n'), Just(b'='), Just(b'>'), Just(b'"'), any::<u8>()
        ]), 0..16),
        cut in any::<u16>(),
        repeat in 1usize..4,
    ) {
        let mut bytes = TEXT.repeat(repeat).into_bytes();
        for (at, b) in edits {
            let i = usize::from(at) % bytes.len();
            bytes[i] = b;
        }
        bytes.truncate(usize::from(cut) % (bytes.len() + 1));
        let (info, problems) = parsed(&String::from_utf8_lossy(&bytes));
        prop_assert!(info.deps.len() <= MAX_DEPS);
        prop_assert!(info.deps.iter().all(|d| !d.path.is_empty()));
        prop_assert!(problems.len() <= 4 * repeat + 16);
    }
}
