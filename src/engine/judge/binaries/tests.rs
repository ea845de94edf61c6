//! Findings from hand-made `--deep` results.

use super::*;
use crate::binary::{BinaryFormat, BinaryInfo, ElfClass, ElfInfo, Endian, GoBuildInfo};
use crate::digest::Digest;
use crate::graph::{EntryCheck, Image};
use crate::manifest::{ImageConfig, Index, Manifest};

fn config(os: &str, arch: &str, labels: &str) -> ImageConfig {
    ImageConfig::parse(
        format!(r#"{{"os":"{os}","architecture":"{arch}","config":{{"Labels":{{{labels}}}}}}}"#)
            .as_bytes(),
    )
    .unwrap()
}

fn elf(machine: u16, go_revision: Option<&str>) -> BinaryInfo {
    BinaryInfo {
        format: BinaryFormat::Elf(ElfInfo {
            class: ElfClass::Elf64,
            endian: Endian::Little,
            machine,
            arm_arch: None,
        }),
        go: go_revision.map(|r| GoBuildInfo {
            revision: Some(r.into()),
            ..GoBuildInfo::default()
        }),
        incomplete: vec![],
    }
}

fn program(outcome: LookupOutcome) -> Program {
    Program {
        name: "driver".into(),
        looked_up: vec!["/driver".into()],
        outcome,
    }
}

fn found(binary: BinaryInfo, dlls: Option<Result<Vec<String>, String>>) -> LookupOutcome {
    LookupOutcome::Found {
        path: "/driver".into(),
        binary: Box::new(binary),
        dlls,
    }
}

fn image_node(n: u8, config: ImageConfig, programs: Vec<Program>) -> Node {
    let manifest = match Manifest::parse(
        br#"{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855","size":0},"layers":[]}"#,
        None,
    ) {
        Ok(Manifest::Image(m)) => m,
        other => panic!("{other:?}"),
    };
    Node {
        digest: Digest::sha256(&[n]),
        media_type: String::new(),
        content: Content::Image(Box::new(Image {
            manifest,
            config: Ok(config),
            layers: vec![],
            entry: Some(EntryCheck {
                command: vec!["driver".into()],
                programs,
            }),
        })),
        served: None,
    }
}

fn list(children: Vec<Node>) -> Graph {
    let index = match Manifest::parse(
        br#"{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[]}"#,
        None,
    ) {
        Ok(Manifest::Index(i)) => i,
        other => panic!("{other:?}"),
    };
    let index: Index = index;
    Graph {
        reference: "r".into(),
        root: Node {
            digest: Digest::sha256(b"root"),
            media_type: String::new(),
            content: Content::Index {
                index,
                children: children.into_iter().map(Some).collect(),
            },
            served: None,
        },
    }
}

fn policy(extra: &str) -> Policy {
    Policy::parse(
        &format!("name: t\nlinux:\n  architectures: [amd64]\n{extra}"),
        "t",
    )
    .unwrap()
}

fn rules(findings: &[Finding]) -> Vec<(Rule, Severity)> {
    findings.iter().map(|f| (f.rule, f.severity)).collect()
}

fn pe(imports: &[&str]) -> BinaryInfo {
    BinaryInfo::pe_amd64_console(imports)
}

#[test]
fn each_program_outcome_gives_its_finding() {
    let rows: Vec<(&str, &str, LookupOutcome, Vec<Rule>, &str)> = vec![
        ("linux", "amd64", found(elf(62, None), None), vec![], ""),
        (
            "linux",
            "arm64",
            found(elf(62, None), None),
            vec![Rule::BinaryPlatformMismatch],
            "linux/arm64 entry",
        ),
        (
            "windows",
            "amd64",
            found(elf(62, None), None),
            vec![Rule::BinaryPlatformMismatch],
            "runs /driver: ELF 64-bit LSB x86-64",
        ),
        (
            "windows",
            "amd64",
            found(pe(&["NETAPI32.dll"]), Some(Ok(vec!["NETAPI32.dll".into()]))),
            vec![Rule::DllMissing],
            "imports NETAPI32.dll",
        ),
        (
            "windows",
            "amd64",
            found(pe(&["NETAPI32.dll"]), Some(Ok(vec![]))),
            vec![],
            "",
        ),
        (
            "windows",
            "amd64",
            found(pe(&[]), Some(Err("layer 1 was not read".into()))),
            vec![Rule::LayerNotChecked],
            "DLL imports were not checked",
        ),
        (
            "linux",
            "amd64",
            LookupOutcome::Missing,
            vec![Rule::EntrypointMissing],
            "looked up: /driver",
        ),
        // Issue 33, item 8: there but refused by the kernel: the container cannot start.
        (
            "linux",
            "amd64",
            LookupOutcome::CannotRun("/driver has mode 0644, no execute bit".into()),
            vec![Rule::EntrypointMissing],
            "cannot be started: /driver has mode 0644",
        ),
        (
            "windows",
            "amd64",
            LookupOutcome::NotChecked("layer 1 was not read".into()),
            vec![Rule::LayerNotChecked],
            "was not checked: layer 1",
        ),
    ];
    for (os, arch, outcome, want, text) in rows {
        let node = image_node(1, config(os, arch, ""), vec![program(outcome.clone())]);
        let image = node.image().unwrap();
        let got = program_findings(&node, image, &image.entry.as_ref().unwrap().programs[0]);
        let got_rules: Vec<Rule> = got.iter().map(|f| f.rule).collect();
        assert_eq!(got_rules, want, "{os}/{arch} {outcome:?}");
        assert!(got.iter().all(|f| f.message.contains(text)), "{got:?}");
    }
}

/// A list, the policy's extra lines, the findings it must give.
type SkewRow = (Graph, &'static str, Vec<(Rule, Severity)>);

#[test]
fn revisions_that_disagree_are_source_skew() {
    let linux = |labels: &str, go: Option<&str>| {
        image_node(
            1,
            config("linux", "amd64", labels),
            vec![program(found(elf(62, go), None))],
        )
    };
    let windows = |labels: &str| {
        image_node(
            2,
            config("windows", "amd64", labels),
            vec![program(found(pe(&[]), Some(Ok(vec![]))))],
        )
    };
    let rev = |r: &str| format!(r#""org.opencontainers.image.revision":"{r}""#);
    let rows: Vec<SkewRow> = vec![
        (
            list(vec![linux(&rev("abc1234"), None), windows(&rev("abc1234"))]),
            "",
            vec![],
        ),
        (
            list(vec![
                linux(&rev("abc1234"), None),
                windows(&rev("abc1234ffffffff")),
            ]),
            "",
            vec![],
        ),
        (
            list(vec![linux(&rev("abc1234"), None), windows(&rev("def5678"))]),
            "",
            vec![(Rule::SourceSkew, Severity::Warning)],
        ),
        (
            list(vec![
                linux(&rev("abc1234"), None),
                windows(r#""vcs-ref":"def5678""#),
            ]),
            "source_skew: error\n",
            vec![(Rule::SourceSkew, Severity::Error)],
        ),
        (
            list(vec![
                linux("", Some("abc1234")),
                windows(r#""io.openshift.build.commit.id":"abc1234""#),
            ]),
            "",
            vec![],
        ),
        (
            list(vec![
                linux(&rev("abc1234"), Some("0000000")),
                windows(&rev("abc1234")),
            ]),
            "",
            vec![(Rule::SourceSkew, Severity::Warning)],
        ),
        (
            list(vec![linux(&rev("abc1234"), None), windows("")]),
            "",
            vec![(Rule::NoSourceRevision, Severity::Info)],
        ),
    ];
    for (graph, extra, want) in rows {
        let got = source_findings(&graph, &policy(extra));
        assert_eq!(rules(&got), want, "{got:?}");
    }
    let graph = list(vec![linux(&rev("abc1234"), None), windows(&rev("def5678"))]);
    let message = &source_findings(&graph, &policy(""))[0].message;
    assert!(
        message.contains("linux/amd64 entry")
            && message.contains("abc1234 (org.opencontainers.image.revision)")
            && message.contains("def5678"),
        "{message}"
    );
}

#[test]
fn abbreviated_revisions_are_the_same() {
    let rows = [
        ("abc1234", "ABC1234def", true),
        ("abc123", "abc123def", false),
        ("abc1234", "abc1235", false),
        ("v1.2.3", "v1.2.3", true),
    ];
    for (a, b, want) in rows {
        assert_eq!(same_revision(a, b), want, "{a} {b}");
    }
}

/// Issue 33, item 8: every program of a `#!` chain is judged for the entry's platform, the
/// interpreter too: a script whose interpreter is an arm64 ELF in a linux/amd64 entry is a
/// `binary-platform-mismatch` naming the interpreter; a script on Windows (no `#!` there)
/// is one naming the script.
#[test]
fn each_interpreter_is_judged_for_the_platform() {
    let script = BinaryInfo {
        format: BinaryFormat::Script {
            interpreter: "/bin/sh".into(),
            args: None,
        },
        go: None,
        incomplete: vec![],
    };
    let found_at = |path: &str, binary: BinaryInfo| Program {
        name: path.into(),
        looked_up: vec![path.into()],
        outcome: LookupOutcome::Found {
            path: path.into(),
            binary: Box::new(binary),
            dlls: None,
        },
    };
    let rows = [
        (
            "linux",
            vec![
                found_at("/entry.sh", script.clone()),
                found_at("/bin/sh", elf(183, None)),
            ],
            "runs /bin/sh: ELF 64-bit LSB AArch64: amd64 needs",
        ),
        (
            "windows",
            vec![found_at("C:\\entry.sh", script.clone())],
            "runs C:\\entry.sh: script #!/bin/sh: not a Windows PE executable",
        ),
    ];
    for (os, programs, want) in rows {
        let node = image_node(1, config(os, "amd64", ""), programs);
        let image = node.image().unwrap();
        let got: Vec<Finding> = image
            .entry
            .iter()
            .flat_map(|e| &e.programs)
            .flat_map(|p| program_findings(&node, image, p))
            .collect();
        assert_eq!(got.len(), 1, "{os}: {got:?}");
        assert_eq!(got[0].rule, Rule::BinaryPlatformMismatch, "{os}");
        assert!(got[0].message.contains(want), "{os}: {}", got[0].message);
    }
}
