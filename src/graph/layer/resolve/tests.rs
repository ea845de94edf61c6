//! The lookup over hand-made layer scans, one row per rule of the runtimes it follows.

use super::*;
use crate::binary::{ElfClass, ElfInfo, Endian};
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

/// One lookup row: what, the entrypoint, the environment, the working directory, the layers
/// (each a list of entries in [`entry`] notation) and how the lookup must end.
struct Row {
    what: &'static str,
    entrypoint: &'static [&'static str],
    env: &'static [&'static str],
    wd: &'static str,
    layers: &'static [&'static [&'static str]],
    want: &'static str,
}

/// An entry in a short notation: `KEY` a file, `KEY -> TARGET` a symbolic link,
/// `KEY => TARGET` a hard link, `-KEY` a whiteout, `KEY/` an opaque directory.
fn entry(text: &str) -> (String, Kind) {
    if let Some((key, target)) = text.split_once(" -> ") {
        return (key.into(), Kind::Symlink(target.into()));
    }
    if let Some((key, target)) = text.split_once(" => ") {
        return (key.into(), Kind::Hardlink(target.into()));
    }
    if let Some(key) = text.strip_prefix('-') {
        return (key.into(), Kind::Whiteout);
    }
    if let Some(key) = text.strip_suffix('/') {
        return (key.into(), Kind::Opaque);
    }
    (text.into(), Kind::File)
}

fn check_rows(os: &str, rows: &[Row], info: &BinaryInfo) {
    for row in rows {
        let plan = Plan::new(os, &run(row.entrypoint, row.env, row.wd));
        let layers: Vec<LayerState> = row
            .layers
            .iter()
            .map(|l| {
                let entries: Vec<(String, Kind)> = l.iter().map(|e| entry(e)).collect();
                let borrowed: Vec<(&str, Kind)> = entries
                    .iter()
                    .map(|(k, kind)| (k.as_str(), kind.clone()))
                    .collect();
                layer(&borrowed, info)
            })
            .collect();
        let got = first(&done(resolve(&plan, &layers, &BTreeMap::new())));
        assert!(got.starts_with(row.want), "{}: {got}", row.what);
    }
}

/// Linux rows: runc `libcontainer/standard_init_linux.go` (`linuxStandardInit.Init` calls
/// `exec.LookPath(Args[0])`), Go `os/exec/lp_unix.go` (`LookPath`: a name with a slash is
/// used as is, else each `PATH` element, empty meaning the working directory), containerd
/// `oci/spec_opts.go` (`WithImageConfigArgs`: `defaultUnixEnv` when the image has no
/// environment; the working directory `/` when unset), the OCI image spec "Whiteouts".
const LINUX_ROWS: &[Row] = &[
    Row {
        what: "absolute path",
        entrypoint: &["/usr/bin/driver"],
        env: &[],
        wd: "",
        layers: &[&["usr/bin/driver"]],
        want: "found /usr/bin/driver",
    },
    Row {
        what: "bare name, image PATH",
        entrypoint: &["driver"],
        env: &["PATH=/opt:/usr/bin"],
        wd: "",
        layers: &[&["usr/bin/driver"]],
        want: "found /usr/bin/driver",
    },
    Row {
        what: "no environment: containerd's default PATH",
        entrypoint: &["driver"],
        env: &[],
        wd: "",
        layers: &[&["usr/local/bin/driver"]],
        want: "found /usr/local/bin/driver",
    },
    Row {
        what: "environment without PATH: nothing searched",
        entrypoint: &["driver"],
        env: &["A=b"],
        wd: "",
        layers: &[&["usr/bin/driver"]],
        want: "missing",
    },
    Row {
        what: "relative path against WorkingDir",
        entrypoint: &["./bin/driver"],
        env: &[],
        wd: "/app",
        layers: &[&["app/bin/driver"]],
        want: "found /app/bin/driver",
    },
    Row {
        what: "empty PATH element: the working directory",
        entrypoint: &["driver"],
        env: &["PATH=:/usr/bin"],
        wd: "/app",
        layers: &[&["app/driver"]],
        want: "found /app/driver",
    },
    Row {
        what: "whiteout in an upper layer",
        entrypoint: &["/driver"],
        env: &[],
        wd: "",
        layers: &[&["driver"], &["-driver"]],
        want: "missing",
    },
    Row {
        what: "whiteout of a directory above",
        entrypoint: &["/opt/x/driver"],
        env: &[],
        wd: "",
        layers: &[&["opt/x/driver"], &["-opt/x"]],
        want: "missing",
    },
    Row {
        what: "opaque directory hides lower files",
        entrypoint: &["/opt/driver"],
        env: &[],
        wd: "",
        layers: &[&["opt/driver"], &["opt/"]],
        want: "missing",
    },
    Row {
        what: "opaque directory keeps its own layer's",
        entrypoint: &["/opt/driver"],
        env: &[],
        wd: "",
        layers: &[&["opt/driver"], &["opt/", "opt/driver"]],
        want: "found /opt/driver",
    },
    Row {
        what: "merged /usr: /bin links to usr/bin",
        entrypoint: &["/bin/driver"],
        env: &[],
        wd: "",
        layers: &[&["bin -> usr/bin", "usr/bin/driver"]],
        want: "found /usr/bin/driver",
    },
    Row {
        what: "absolute link",
        entrypoint: &["/driver"],
        env: &[],
        wd: "",
        layers: &[&["driver -> /opt/real", "opt/real"]],
        want: "found /opt/real",
    },
    Row {
        what: "relative link with ..",
        entrypoint: &["/usr/bin/driver"],
        env: &[],
        wd: "",
        layers: &[&["usr/bin/driver -> ../lib/d/driver", "usr/lib/d/driver"]],
        want: "found /usr/lib/d/driver",
    },
    Row {
        what: "dangling link",
        entrypoint: &["/driver"],
        env: &[],
        wd: "",
        layers: &[&["driver -> /nowhere"]],
        want: "missing",
    },
    Row {
        what: "link loop ends at the hop limit",
        entrypoint: &["/a"],
        env: &[],
        wd: "",
        layers: &[&["a -> b", "b -> a"]],
        want: "not-checked: more than 40 links",
    },
    Row {
        what: "hard link",
        entrypoint: &["/driver"],
        env: &[],
        wd: "",
        layers: &[&["opt/real", "driver => opt/real"]],
        want: "found /opt/real",
    },
];

#[test]
fn linux_lookups() {
    check_rows("linux", LINUX_ROWS, &elf());
}

/// Windows rows: Microsoft "CreateProcessW" (`lpCommandLine`: `.exe` appended to a name
/// without an extension; a bare name searched in the current directory, System32, System,
/// the Windows directory, then `PATH`), names compared case-insensitively, `C:\X` is
/// `Files/X` of a Windows layer (hcsshim `pkg/ociwclayer`: layer files under `Files/`).
const WINDOWS_ROWS: &[Row] = &[
    Row {
        what: "drive path",
        entrypoint: &["C:\\app\\driver.exe"],
        env: &[],
        wd: "",
        layers: &[&["app/driver.exe"]],
        want: "found C:\\app\\driver.exe",
    },
    Row {
        what: "root path with slashes",
        entrypoint: &["/driver.exe"],
        env: &[],
        wd: "",
        layers: &[&["driver.exe"]],
        want: "found C:\\driver.exe",
    },
    Row {
        what: ".exe implied",
        entrypoint: &["C:\\app\\driver"],
        env: &[],
        wd: "",
        layers: &[&["app/driver.exe"]],
        want: "found C:\\app\\driver.exe",
    },
    Row {
        what: "an extension given: nothing appended",
        entrypoint: &["C:\\app\\driver.v2"],
        env: &[],
        wd: "",
        layers: &[&["app/driver.v2.exe"]],
        want: "missing",
    },
    Row {
        what: "case-insensitive",
        entrypoint: &["C:\\APP\\Driver.EXE"],
        env: &[],
        wd: "",
        layers: &[&["app/driver.exe"]],
        want: "found C:\\app\\driver.exe",
    },
    Row {
        what: "bare name in WorkingDir",
        entrypoint: &["driver"],
        env: &[],
        wd: "C:\\app",
        layers: &[&["app/driver.exe"]],
        want: "found C:\\app\\driver.exe",
    },
    Row {
        what: "shell form: cmd in System32",
        entrypoint: &["cmd", "/S", "/C", "x"],
        env: &[],
        wd: "",
        layers: &[&["windows/system32/cmd.exe"]],
        want: "found C:\\windows\\system32\\cmd.exe",
    },
    Row {
        what: "PATH, %SystemRoot% expanded",
        entrypoint: &["tool"],
        env: &["Path=%SystemRoot%\\tools;C:\\bin"],
        wd: "",
        layers: &[&["windows/tools/tool.exe"]],
        want: "found C:\\windows\\tools\\tool.exe",
    },
    Row {
        what: "relative path against WorkingDir",
        entrypoint: &["bin\\driver.exe"],
        env: &[],
        wd: "C:\\app",
        layers: &[&["app/bin/driver.exe"]],
        want: "found C:\\app\\bin\\driver.exe",
    },
    Row {
        what: "missing",
        entrypoint: &["C:\\app\\driver.exe"],
        env: &[],
        wd: "",
        layers: &[&["app/other.exe"]],
        want: "missing",
    },
    Row {
        what: "a hard link (base layers use them)",
        entrypoint: &["cmd"],
        env: &[],
        wd: "",
        layers: &[&[
            "windows/winsxs/cmd.exe",
            "windows/system32/cmd.exe => windows/winsxs/cmd.exe",
        ]],
        want: "found C:\\windows\\winsxs\\cmd.exe",
    },
];

#[test]
fn windows_lookups() {
    check_rows("windows", WINDOWS_ROWS, &BinaryInfo::pe_amd64_console(&[]));
}

/// A layer not read (a foreign base) leaves a program below or in it unknown, never missing.
#[test]
fn unread_layers_leave_the_program_unknown() {
    let plan = Plan::new("windows", &run(&["cmd", "/S", "/C", "x"], &[], ""));
    let foreign = LayerState::NotRead("foreign layer".into());
    let top = layer(
        &[("app/driver.exe", Kind::File)],
        &BinaryInfo::pe_amd64_console(&[]),
    );
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
            &[layer(&entries, &BinaryInfo::pe_amd64_console(&imports))],
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
