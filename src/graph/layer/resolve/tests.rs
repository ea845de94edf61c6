//! The lookup over hand-made layer scans, one row per rule of the runtimes it follows.

use super::*;
use crate::binary::{ElfClass, ElfInfo, Endian, PeInfo};
use crate::graph::layer::scan::Seen;

fn elf() -> BinaryInfo {
    BinaryInfo {
        format: Format::Elf(ElfInfo {
            class: ElfClass::Elf64,
            endian: Endian::Little,
            machine: 62,
            arm_arch: None,
        }),
        go: None,
        incomplete: vec![],
    }
}

fn pe(imports: &[&str]) -> BinaryInfo {
    BinaryInfo {
        format: Format::Pe(PeInfo {
            machine: 0x8664,
            magic: Some(0x20b),
            subsystem: Some(3),
            imports: imports.iter().map(ToString::to_string).collect(),
        }),
        go: None,
        incomplete: vec![],
    }
}

fn script(interpreter: &str, args: Option<&str>) -> BinaryInfo {
    BinaryInfo {
        format: Format::Script {
            interpreter: interpreter.into(),
            args: args.map(Into::into),
        },
        go: None,
        incomplete: vec![],
    }
}

/// A layer from `(key, kind)` pairs; every file is probed as `info`.
fn layer(entries: &[(&str, Kind)], info: &BinaryInfo) -> LayerState {
    let mut scan = LayerScan::default();
    for (key, kind) in entries {
        scan.seen.push(Seen {
            key: key.to_string(),
            kind: kind.clone(),
        });
        if *kind == Kind::File {
            scan.probed.insert(key.to_string(), info.clone());
        }
    }
    LayerState::Read(scan)
}

fn run(entrypoint: &[&str], env: &[&str], wd: &str) -> RunConfig {
    RunConfig {
        entrypoint: entrypoint.iter().map(ToString::to_string).collect(),
        cmd: vec![],
        env: env.iter().map(ToString::to_string).collect(),
        working_dir: wd.into(),
        labels: Default::default(),
    }
}

fn done(step: Step) -> EntryCheck {
    match step {
        Step::Done(check) => check,
        Step::Need { layer, key } => panic!("needs {key} of layer {layer}"),
    }
}

/// What the first program's lookup ended in: `found PATH`, `missing`, `not-checked`.
fn first(check: &EntryCheck) -> String {
    match &check.programs[0].outcome {
        Outcome::Found { path, .. } => format!("found {path}"),
        Outcome::Missing => "missing".into(),
        Outcome::NotChecked(why) => format!("not-checked: {why}"),
    }
}

/// Linux rows: runc `libcontainer/standard_init_linux.go` (`linuxStandardInit.Init` calls
/// `exec.LookPath(Args[0])`), Go `os/exec/lp_unix.go` (`LookPath`: a name with a slash is
/// used as is, else each `PATH` element, empty meaning the working directory), containerd
/// `oci/spec_opts.go` (`WithImageConfigArgs`: `defaultUnixEnv` when the image has no
/// environment; the working directory `/` when unset), the OCI image spec "Whiteouts".
#[test]
fn linux_lookups() {
    let f = Kind::File;
    let sym = |t: &str| Kind::Symlink(t.into());
    type Row<'a> = (
        &'a str,
        Vec<&'a str>,
        Vec<&'a str>,
        &'a str,
        Vec<Vec<(&'a str, Kind)>>,
        &'a str,
    );
    let rows: Vec<Row> = vec![
        (
            "absolute path",
            vec!["/usr/bin/driver"],
            vec![],
            "",
            vec![vec![("usr/bin/driver", f.clone())]],
            "found /usr/bin/driver",
        ),
        (
            "bare name, image PATH",
            vec!["driver"],
            vec!["PATH=/opt:/usr/bin"],
            "",
            vec![vec![("usr/bin/driver", f.clone())]],
            "found /usr/bin/driver",
        ),
        (
            "bare name, no environment: containerd's default PATH",
            vec!["driver"],
            vec![],
            "",
            vec![vec![("usr/local/bin/driver", f.clone())]],
            "found /usr/local/bin/driver",
        ),
        (
            "bare name, environment without PATH: nothing searched",
            vec!["driver"],
            vec!["A=b"],
            "",
            vec![vec![("usr/bin/driver", f.clone())]],
            "missing",
        ),
        (
            "relative path against WorkingDir",
            vec!["./bin/driver"],
            vec![],
            "/app",
            vec![vec![("app/bin/driver", f.clone())]],
            "found /app/bin/driver",
        ),
        (
            "empty PATH element is the working directory",
            vec!["driver"],
            vec!["PATH=:/usr/bin"],
            "/app",
            vec![vec![("app/driver", f.clone())]],
            "found /app/driver",
        ),
        (
            "whiteout in an upper layer",
            vec!["/driver"],
            vec![],
            "",
            vec![
                vec![("driver", f.clone())],
                vec![("driver", Kind::Whiteout)],
            ],
            "missing",
        ),
        (
            "whiteout of a directory above",
            vec!["/opt/x/driver"],
            vec![],
            "",
            vec![
                vec![("opt/x/driver", f.clone())],
                vec![("opt/x", Kind::Whiteout)],
            ],
            "missing",
        ),
        (
            "opaque directory hides the lower layer's files",
            vec!["/opt/driver"],
            vec![],
            "",
            vec![vec![("opt/driver", f.clone())], vec![("opt", Kind::Opaque)]],
            "missing",
        ),
        (
            "opaque directory keeps its own layer's files",
            vec!["/opt/driver"],
            vec![],
            "",
            vec![
                vec![("opt/driver", f.clone())],
                vec![("opt", Kind::Opaque), ("opt/driver", f.clone())],
            ],
            "found /opt/driver",
        ),
        (
            "merged /usr: /bin is a link to usr/bin",
            vec!["/bin/driver"],
            vec![],
            "",
            vec![vec![("bin", sym("usr/bin")), ("usr/bin/driver", f.clone())]],
            "found /usr/bin/driver",
        ),
        (
            "absolute link",
            vec!["/driver"],
            vec![],
            "",
            vec![vec![("driver", sym("/opt/real")), ("opt/real", f.clone())]],
            "found /opt/real",
        ),
        (
            "relative link with ..",
            vec!["/usr/bin/driver"],
            vec![],
            "",
            vec![vec![
                ("usr/bin/driver", sym("../lib/d/driver")),
                ("usr/lib/d/driver", f.clone()),
            ]],
            "found /usr/lib/d/driver",
        ),
        (
            "dangling link",
            vec!["/driver"],
            vec![],
            "",
            vec![vec![("driver", sym("/nowhere"))]],
            "missing",
        ),
        (
            "link loop ends at the hop limit",
            vec!["/a"],
            vec![],
            "",
            vec![vec![("a", sym("b")), ("b", sym("a"))]],
            "not-checked: more than 40 links",
        ),
        (
            "a hard link names another file",
            vec!["/driver"],
            vec![],
            "",
            vec![vec![
                ("opt/real", f.clone()),
                ("driver", Kind::Hardlink("opt/real".into())),
            ]],
            "found /opt/real",
        ),
    ];
    for (what, entrypoint, env, wd, layers, want) in rows {
        let plan = Plan::new("linux", &run(&entrypoint, &env, wd));
        let layers: Vec<LayerState> = layers.iter().map(|l| layer(l, &elf())).collect();
        let got = first(&done(resolve(&plan, &layers, &BTreeMap::new())));
        assert!(got.starts_with(want), "{what}: {got}");
    }
}

/// Windows rows: Microsoft "CreateProcessW" (`lpCommandLine`: `.exe` appended to a name
/// without an extension; a bare name searched in the current directory, System32, System,
/// the Windows directory, then `PATH`), names compared case-insensitively, `C:\X` is
/// `Files/X` of a Windows layer (hcsshim `pkg/ociwclayer`: layer files under `Files/`).
#[test]
fn windows_lookups() {
    let f = Kind::File;
    type Row<'a> = (
        &'a str,
        Vec<&'a str>,
        Vec<&'a str>,
        &'a str,
        Vec<(&'a str, Kind)>,
        &'a str,
    );
    let rows: Vec<Row> = vec![
        (
            "drive path",
            vec!["C:\\app\\driver.exe"],
            vec![],
            "",
            vec![("app/driver.exe", f.clone())],
            "found C:\\app\\driver.exe",
        ),
        (
            "root path with slashes",
            vec!["/driver.exe"],
            vec![],
            "",
            vec![("driver.exe", f.clone())],
            "found C:\\driver.exe",
        ),
        (
            ".exe implied",
            vec!["C:\\app\\driver"],
            vec![],
            "",
            vec![("app/driver.exe", f.clone())],
            "found C:\\app\\driver.exe",
        ),
        (
            "an extension given: nothing appended",
            vec!["C:\\app\\driver.v2"],
            vec![],
            "",
            vec![("app/driver.v2.exe", f.clone())],
            "missing",
        ),
        (
            "case-insensitive",
            vec!["C:\\APP\\Driver.EXE"],
            vec![],
            "",
            vec![("app/driver.exe", f.clone())],
            "found C:\\app\\driver.exe",
        ),
        (
            "bare name in WorkingDir",
            vec!["driver"],
            vec![],
            "C:\\app",
            vec![("app/driver.exe", f.clone())],
            "found C:\\app\\driver.exe",
        ),
        (
            "bare name in System32 (shell form: cmd)",
            vec!["cmd", "/S", "/C", "x"],
            vec![],
            "",
            vec![("windows/system32/cmd.exe", f.clone())],
            "found C:\\windows\\system32\\cmd.exe",
        ),
        (
            "bare name in PATH, %SystemRoot% expanded",
            vec!["tool"],
            vec!["Path=%SystemRoot%\\tools;C:\\bin"],
            "",
            vec![("windows/tools/tool.exe", f.clone())],
            "found C:\\windows\\tools\\tool.exe",
        ),
        (
            "relative path against WorkingDir",
            vec!["bin\\driver.exe"],
            vec![],
            "C:\\app",
            vec![("app/bin/driver.exe", f.clone())],
            "found C:\\app\\bin\\driver.exe",
        ),
        (
            "missing",
            vec!["C:\\app\\driver.exe"],
            vec![],
            "",
            vec![("app/other.exe", f.clone())],
            "missing",
        ),
    ];
    for (what, entrypoint, env, wd, entries, want) in rows {
        let plan = Plan::new("windows", &run(&entrypoint, &env, wd));
        let layers = vec![layer(&entries, &pe(&[]))];
        let got = first(&done(resolve(&plan, &layers, &BTreeMap::new())));
        assert!(got.starts_with(want), "{what}: {got}");
    }
}

/// A layer not read (a foreign base) leaves a program below or in it unknown, never missing.
#[test]
fn unread_layers_leave_the_program_unknown() {
    let plan = Plan::new("windows", &run(&["cmd", "/S", "/C", "x"], &[], ""));
    let foreign = LayerState::NotRead("foreign layer".into());
    let top = layer(&[("app/driver.exe", Kind::File)], &pe(&[]));
    let got = first(&done(resolve(
        &plan,
        &[foreign.clone(), top.clone()],
        &BTreeMap::new(),
    )));
    assert!(
        got.starts_with("not-checked: layer 1 was not read (foreign layer)"),
        "{got}"
    );
    // Found above every unread layer: judged.
    let plan = Plan::new("windows", &run(&["C:\\app\\driver.exe"], &[], ""));
    let check = done(resolve(
        &plan,
        &[foreign.clone(), top.clone()],
        &BTreeMap::new(),
    ));
    assert_eq!(first(&check), "found C:\\app\\driver.exe");
    // …but its DLLs could be in the unread layer: no DLL verdict.
    assert!(
        matches!(&check.programs[0].outcome, Outcome::Found { dlls: Some(Err(why)), .. } if why.contains("not read")),
        "{check:?}"
    );
    // An unread layer above the file could replace it.
    let got = first(&done(resolve(&plan, &[top, foreign], &BTreeMap::new())));
    assert!(got.starts_with("not-checked: layer 2"), "{got}");
}

/// Imported DLLs come from the program's directory, System32 and the other directories of
/// the loader's search (Microsoft, "Dynamic-link library search order"); API sets are no
/// files (binary::dll::is_api_set).
#[test]
fn dlls_are_looked_for_where_the_loader_looks() {
    let plan = Plan::new("windows", &run(&["C:\\app\\driver.exe"], &[], ""));
    let imports = [
        "KERNEL32.dll",
        "NETAPI32.dll",
        "helper.dll",
        "api-ms-win-core-synch-l1-2-0.dll",
    ];
    let rows: Vec<(Vec<&str>, Vec<String>)> = vec![
        (
            vec!["windows/system32/kernel32.dll"],
            vec!["NETAPI32.dll".into(), "helper.dll".into()],
        ),
        (
            vec![
                "windows/system32/kernel32.dll",
                "windows/system32/netapi32.dll",
                "app/helper.dll",
            ],
            vec![],
        ),
        (
            vec![
                "windows/system32/kernel32.dll",
                "windows/system32/netapi32.dll",
                "other/helper.dll",
            ],
            vec!["helper.dll".into()],
        ),
    ];
    for (files, want) in rows {
        let mut entries: Vec<(&str, Kind)> = files.iter().map(|k| (*k, Kind::File)).collect();
        entries.push(("app/driver.exe", Kind::File));
        let check = done(resolve(
            &plan,
            &[layer(&entries, &pe(&imports))],
            &BTreeMap::new(),
        ));
        match &check.programs[0].outcome {
            Outcome::Found {
                dlls: Some(Ok(missing)),
                ..
            } => assert_eq!(missing, &want, "{files:?}"),
            other => panic!("{other:?}"),
        }
    }
}

/// A script's interpreter is the next program (Linux `binfmt_script`: the `#!` path, taken
/// as it is); `/usr/bin/env NAME` goes on to NAME, searched in `PATH`. A file that was not a
/// target of the first read is asked for (`Step::Need`).
#[test]
fn scripts_lead_to_their_interpreter() {
    let plan = Plan::new("linux", &run(&["/entry.sh"], &[], ""));
    let mut scan = LayerScan::default();
    for key in ["entry.sh", "usr/bin/env", "usr/bin/python3"] {
        scan.seen.push(Seen {
            key: key.into(),
            kind: Kind::File,
        });
    }
    scan.probed.insert(
        "entry.sh".into(),
        script("/usr/bin/env", Some("python3 -u")),
    );
    let layers = vec![LayerState::Read(scan)];
    let mut probed = BTreeMap::new();
    assert_eq!(
        resolve(&plan, &layers, &probed),
        Step::Need {
            layer: 0,
            key: "usr/bin/env".into()
        }
    );
    probed.insert((0, "usr/bin/env".to_string()), elf());
    assert_eq!(
        resolve(&plan, &layers, &probed),
        Step::Need {
            layer: 0,
            key: "usr/bin/python3".into()
        }
    );
    probed.insert((0, "usr/bin/python3".to_string()), elf());
    let check = done(resolve(&plan, &layers, &probed));
    let names: Vec<&str> = check.programs.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["/entry.sh", "/usr/bin/env", "python3"]);
}

/// The first read's targets: every candidate file, and on Windows the directories the
/// lookup and the DLL search list.
#[test]
fn targets_name_the_candidates() {
    let plan = Plan::new("windows", &run(&["driver"], &["PATH=C:\\bin"], "C:\\app"));
    let t = plan.targets();
    let probe: Vec<&str> = t.probe.iter().map(String::as_str).collect();
    assert_eq!(
        probe,
        [
            "app/driver.exe",
            "bin/driver.exe",
            "windows/driver.exe",
            "windows/system/driver.exe",
            "windows/system32/driver.exe"
        ]
    );
    assert!(t.dirs.contains("windows/system32") && t.dirs.contains("app"));
    assert!(
        Plan::new("linux", &RunConfig::default())
            .targets()
            .probe
            .is_empty()
    );
}
