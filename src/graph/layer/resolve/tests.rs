//! The lookup over hand-made layer scans, one row per rule of the runtimes it follows.

use super::*;
use crate::binary::{ElfClass, ElfInfo, Endian};
use crate::graph::layer::scan::{Kind, LayerScan, Seen};

fn elf() -> BinaryInfo {
    BinaryInfo {
        format: BinaryFormat::Elf(ElfInfo {
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
        format: BinaryFormat::Script {
            interpreter: interpreter.into(),
            args: args.map(Into::into),
        },
        go: None,
        incomplete: vec![],
    }
}

/// A layer from `(key, kind)` pairs (mode 0755); every file is probed as `info`.
fn layer(entries: &[(&str, Kind)], info: &BinaryInfo) -> LayerState {
    let parsed: Vec<Parsed> = entries
        .iter()
        .map(|(key, kind)| Parsed {
            key: key.to_string(),
            kind: kind.clone(),
            mode: 0o755,
            info: None,
        })
        .collect();
    layer_of(&parsed, info)
}

/// A layer of parsed entries; a file is probed as its own info, else as `info`.
fn layer_of(entries: &[Parsed], info: &BinaryInfo) -> LayerState {
    let mut scan = LayerScan::default();
    for e in entries {
        scan.seen.push(Seen {
            key: e.key.clone(),
            kind: e.kind.clone(),
            mode: e.mode,
        });
        if e.kind == Kind::File {
            let probe = e.info.clone().unwrap_or_else(|| info.clone());
            scan.probed.insert(e.key.clone(), probe);
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

fn done(step: LookupStep) -> EntryCheck {
    match step {
        LookupStep::Done(check) => check,
        LookupStep::Need { layer, key } => panic!("needs {key} of layer {layer}"),
    }
}

/// How one program's lookup ended: `found PATH`, `missing`, `cannot-run: WHY`,
/// `not-checked: WHY`.
fn outcome(program: &Program) -> String {
    match &program.outcome {
        LookupOutcome::Found { path, .. } => format!("found {path}"),
        LookupOutcome::Missing => "missing".into(),
        LookupOutcome::CannotRun(why) => format!("cannot-run: {why}"),
        LookupOutcome::NotChecked(why) => format!("not-checked: {why}"),
    }
}

/// What the first program's lookup ended in.
fn first(check: &EntryCheck) -> String {
    outcome(&check.programs[0])
}

/// Asserts the chain of programs: one `|`-separated prefix per program, no more, no fewer.
fn assert_chain(what: &str, check: &EntryCheck, want: &str) {
    let got: Vec<String> = check.programs.iter().map(outcome).collect();
    let wants: Vec<&str> = want.split(" | ").collect();
    assert!(
        got.len() == wants.len() && got.iter().zip(&wants).all(|(g, w)| g.starts_with(w)),
        "{what}: {got:?}"
    );
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

/// One entry of a hand-made layer.
struct Parsed {
    key: String,
    kind: Kind,
    mode: u32,
    /// The file's own headers (a script), else the row's.
    info: Option<BinaryInfo>,
}

/// An entry in a short notation: `KEY` a file (mode 0755), `KEY (0644)` a file of that
/// mode, `KEY #!INTERPRETER [ARG]` a script, `KEY -> TARGET` a symbolic link,
/// `KEY => TARGET` a hard link, `-KEY` a whiteout, `KEY/` an opaque directory, `dir:KEY` a
/// directory, `dev:KEY` a device.
fn entry(text: &str) -> Parsed {
    let parsed = |key: &str, kind: Kind| Parsed {
        key: key.into(),
        kind,
        mode: 0o755,
        info: None,
    };
    if let Some((key, target)) = text.split_once(" -> ") {
        return parsed(key, Kind::Symlink(target.into()));
    }
    if let Some((key, target)) = text.split_once(" => ") {
        return parsed(key, Kind::Hardlink(target.into()));
    }
    if let Some((key, line)) = text.split_once(" #!") {
        let (interpreter, args) = match line.split_once(' ') {
            Some((i, a)) => (i, Some(a)),
            None => (line, None),
        };
        let mut p = parsed(key, Kind::File);
        p.info = Some(script(interpreter, args));
        return p;
    }
    if let Some((key, mode)) = text.split_once(" (") {
        let mut p = parsed(key, Kind::File);
        p.mode = u32::from_str_radix(mode.trim_end_matches(')'), 8).unwrap();
        return p;
    }
    if let Some(key) = text.strip_prefix("dir:") {
        return parsed(key, Kind::Dir);
    }
    if let Some(key) = text.strip_prefix("dev:") {
        return parsed(key, Kind::Special);
    }
    if let Some(key) = text.strip_prefix('-') {
        return parsed(key, Kind::Whiteout);
    }
    if let Some(key) = text.strip_suffix('/') {
        return parsed(key, Kind::Opaque);
    }
    parsed(text, Kind::File)
}

/// The layers of a row.
fn layers_of(layers: &[&[&str]], info: &BinaryInfo) -> Vec<LayerState> {
    layers
        .iter()
        .map(|l| layer_of(&l.iter().map(|e| entry(e)).collect::<Vec<_>>(), info))
        .collect()
}

fn check_rows(os: &str, rows: &[Row], info: &BinaryInfo) {
    for row in rows {
        let plan = LookupPlan::new(os, &run(row.entrypoint, row.env, row.wd));
        let layers = layers_of(row.layers, info);
        let check = done(resolve(&plan, &layers, &BTreeMap::new()));
        assert_chain(row.what, &check, row.want);
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
        what: "empty PATH element: found in the working directory, refused (Go's ErrDot)",
        entrypoint: &["driver"],
        env: &["PATH=:/usr/bin"],
        wd: "/app",
        layers: &[&["app/driver"]],
        want: "cannot-run: /app/driver was found through the relative PATH element",
    },
    Row {
        what: "empty PATH element: an absolute element after it still serves",
        entrypoint: &["driver"],
        env: &["PATH=:/usr/bin"],
        wd: "/app",
        layers: &[&["usr/bin/driver"]],
        want: "found /usr/bin/driver",
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
        what: "hard link",
        entrypoint: &["/driver"],
        env: &[],
        wd: "",
        layers: &[&["opt/real", "driver => opt/real"]],
        want: "found /driver",
    },
];

/// Linux rows of the kernel's and the unpackers' own rules (issue 33, item 8), one per
/// rule, each naming the code that decides it.
const KERNEL_ROWS: &[Row] = &[
    // containerd pkg/archive/tar.go applyNaive (containers/storage pkg/archive UnpackLayer):
    // an entry replaces what its name held unless both are directories.
    Row {
        what: "a directory in an upper layer replaces the entrypoint",
        entrypoint: &["/driver"],
        env: &[],
        wd: "",
        layers: &[&["driver"], &["dir:driver"]],
        want: "cannot-run: /driver is a directory",
    },
    Row {
        what: "a file in an upper layer replaces a parent directory and what it held",
        entrypoint: &["/opt/x/driver"],
        env: &[],
        wd: "",
        layers: &[&["opt/x/driver"], &["opt/x"]],
        want: "missing",
    },
    Row {
        what: "a directory in an upper layer replaces a parent that was a link",
        entrypoint: &["/bin/driver"],
        env: &[],
        wd: "",
        layers: &[&["bin -> usr/bin", "usr/bin/driver"], &["dir:bin"]],
        want: "missing",
    },
    Row {
        what: "a directory over a directory merges",
        entrypoint: &["/opt/driver"],
        env: &[],
        wd: "",
        layers: &[&["dir:opt", "opt/driver"], &["dir:opt"]],
        want: "found /opt/driver",
    },
    // link(2) in createTarFile (tar.TypeLink): the name shares the inode its target named
    // when the entry was applied, whatever replaces the target's name later.
    Row {
        what: "a hard link keeps the inode it linked when the target is replaced",
        entrypoint: &["/driver"],
        env: &[],
        wd: "",
        layers: &[
            &["opt/real", "driver => opt/real"],
            &["opt/real #!/nowhere"],
        ],
        want: "found /driver",
    },
    Row {
        what: "a hard link to a name that does not exist yet: no file",
        entrypoint: &["/driver"],
        env: &[],
        wd: "",
        layers: &[&["driver => opt/real", "opt/real"]],
        want: "missing",
    },
    // fs/namei.c: MAXSYMLINKS (40) links per lookup, then ELOOP; execve fails.
    Row {
        what: "a symbolic link loop: ELOOP, the container cannot start",
        entrypoint: &["/a"],
        env: &[],
        wd: "",
        layers: &[&["a -> b", "b -> a"]],
        want: "cannot-run: /a: ELOOP: more than 40 symbolic links",
    },
    // fs/namei.c follow_dotdot: `..` is the parent of the directory the link led to.
    Row {
        what: "`..` after a link: the link's target's parent, not the name's",
        entrypoint: &["/opt/l/../driver"],
        env: &[],
        wd: "",
        layers: &[&[
            "opt/l -> /srv/a",
            "srv/a/x",
            "srv/driver",
            "opt/driver (0644)",
        ]],
        want: "found /srv/driver",
    },
    Row {
        what: "`..` in the working directory after a link",
        entrypoint: &["../driver"],
        env: &[],
        wd: "/w",
        layers: &[&["w -> /srv/a", "srv/a/x", "srv/driver"]],
        want: "found /srv/driver",
    },
    Row {
        what: "a file as a directory in the path: ENOTDIR",
        entrypoint: &["/opt/driver/x"],
        env: &[],
        wd: "",
        layers: &[&["opt/driver"]],
        want: "missing",
    },
    // fs/namei.c may_open / generic_permission: exec needs an execute bit, even for root;
    // a directory or a device is EACCES. Go's LookPath (findExecutable) refuses it too.
    Row {
        what: "a 0644 entrypoint cannot be executed",
        entrypoint: &["/driver"],
        env: &[],
        wd: "",
        layers: &[&["driver (0644)"]],
        want: "cannot-run: /driver has mode 0644, no execute bit",
    },
    Row {
        what: "a 0644 entrypoint made executable by an upper layer",
        entrypoint: &["/driver"],
        env: &[],
        wd: "",
        layers: &[&["driver (0644)"], &["driver (0700)"]],
        want: "found /driver",
    },
    Row {
        what: "PATH search skips a file without an execute bit",
        entrypoint: &["driver"],
        env: &["PATH=/a:/b"],
        wd: "",
        layers: &[&["a/driver (0644)", "b/driver"]],
        want: "found /b/driver",
    },
    Row {
        what: "PATH search with only a file without an execute bit",
        entrypoint: &["driver"],
        env: &["PATH=/a:/b"],
        wd: "",
        layers: &[&["a/driver (0644)"]],
        want: "cannot-run: no candidate can run, the PATH search skips them: /a/driver has mode 0644",
    },
    Row {
        what: "a device",
        entrypoint: &["/dev/x"],
        env: &[],
        wd: "",
        layers: &[&["dev:dev/x"]],
        want: "cannot-run: /dev/x is not a regular file",
    },
    // fs/binfmt_script.c load_script: open_exec(interpreter), the path as written, against
    // the working directory when relative: no PATH. The interpreter needs MAY_EXEC too.
    Row {
        what: "a bare #!sh is opened in the working directory, not through PATH",
        entrypoint: &["/entry.sh"],
        env: &["PATH=/bin"],
        wd: "/app",
        layers: &[&["entry.sh #!sh", "bin/sh", "app/sh"]],
        want: "found /entry.sh | found /app/sh",
    },
    Row {
        what: "a bare #!sh with no such file in the working directory",
        entrypoint: &["/entry.sh"],
        env: &["PATH=/bin"],
        wd: "/app",
        layers: &[&["entry.sh #!sh", "bin/sh"]],
        want: "found /entry.sh | missing",
    },
    Row {
        what: "an interpreter without an execute bit",
        entrypoint: &["/entry.sh"],
        env: &[],
        wd: "",
        layers: &[&["entry.sh #!/bin/sh", "bin/sh (0644)"]],
        want: "found /entry.sh | cannot-run: /bin/sh has mode 0644",
    },
    // fs/exec.c exec_binprm: past depth 5 of #! rewrites, ELOOP.
    Row {
        what: "a #! naming itself: ELOOP",
        entrypoint: &["/entry.sh"],
        env: &[],
        wd: "",
        layers: &[&["entry.sh #!/entry.sh"]],
        want: "found /entry.sh | found /entry.sh | found /entry.sh | found /entry.sh | \
               found /entry.sh | found /entry.sh | cannot-run: ELOOP",
    },
    Row {
        what: "five #! scripts (over two layers) then a binary: runs",
        entrypoint: &["/s1"],
        env: &[],
        wd: "",
        layers: &[
            &["s1 #!/s2", "s2 #!/s3", "s3 #!/s4"],
            &["s4 #!/s5", "s5 #!/elf", "elf"],
        ],
        want: "found /s1 | found /s2 | found /s3 | found /s4 | found /s5 | found /elf",
    },
    Row {
        what: "six #! scripts: ELOOP",
        entrypoint: &["/s1"],
        env: &[],
        wd: "",
        layers: &[&[
            "s1 #!/s2",
            "s2 #!/s3",
            "s3 #!/s4",
            "s4 #!/s5",
            "s5 #!/s6",
            "s6 #!/elf",
            "elf",
        ]],
        want: "found /s1 | found /s2 | found /s3 | found /s4 | found /s5 | found /s6 | \
               cannot-run: ELOOP",
    },
    Row {
        what: "env starts a new execve: its program may be a script again",
        entrypoint: &["/s1"],
        env: &["PATH=/bin"],
        wd: "",
        layers: &[&[
            "s1 #!/usr/bin/env s2",
            "usr/bin/env",
            "bin/s2 #!/elf",
            "elf",
        ]],
        want: "found /s1 | found /usr/bin/env | found /bin/s2 | found /elf",
    },
];

#[test]
fn linux_lookups_follow_the_kernel() {
    check_rows("linux", KERNEL_ROWS, &elf());
}

/// `MAXSYMLINKS` (fs/namei.c): a chain of 40 links is followed, 41 is `ELOOP`; `NAME_MAX`
/// (255) and `PATH_MAX` (4096, with its NUL) bound a name and a path (`ENAMETOOLONG`).
#[test]
fn link_chains_and_long_names_end_where_the_kernel_ends_them() {
    let chain = |links: usize| -> Vec<String> {
        let mut entries: Vec<String> = (0..links).map(|i| format!("l{i} -> l{}", i + 1)).collect();
        entries.push(format!("l{links}"));
        entries
    };
    for (links, want) in [
        (40, "found /l40"),
        (41, "cannot-run: /l0: ELOOP: more than 40 symbolic links"),
    ] {
        let entries = chain(links);
        let refs: Vec<&str> = entries.iter().map(String::as_str).collect();
        let plan = LookupPlan::new("linux", &run(&["/l0"], &[], ""));
        let check = done(resolve(
            &plan,
            &layers_of(&[&refs], &elf()),
            &BTreeMap::new(),
        ));
        assert_chain(&format!("{links} links"), &check, want);
    }
    let name = |len: usize| "n".repeat(len);
    let deep = |len: usize| format!("{}/x", "/d".repeat(len / 2));
    for (path, want) in [
        (format!("/{}", name(255)), "found"),
        (format!("/{}", name(256)), "cannot-run: /"),
        (deep(4092), "found"),
        (deep(4094), "cannot-run: /"),
    ] {
        let key = path.trim_start_matches('/').to_string();
        let plan = LookupPlan::new(
            "linux",
            &RunConfig {
                entrypoint: vec![path.clone()],
                ..RunConfig::default()
            },
        );
        let check = done(resolve(
            &plan,
            &layers_of(&[&[&key]], &elf()),
            &BTreeMap::new(),
        ));
        assert_chain(&format!("{} bytes", path.len()), &check, want);
        if want != "found" {
            assert!(first(&check).contains("ENAMETOOLONG"), "{}", first(&check));
        }
    }
}

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
        want: "found C:\\windows\\system32\\cmd.exe",
    },
    Row {
        what: "a #! script is no Windows program: its interpreter is not looked up",
        entrypoint: &["C:\\entry.sh"],
        env: &[],
        wd: "",
        layers: &[&["entry.sh #!/bin/sh"]],
        want: "found C:\\entry.sh",
    },
];

#[test]
fn windows_lookups() {
    check_rows("windows", WINDOWS_ROWS, &BinaryInfo::pe_amd64_console(&[]));
}

/// A layer not read (a foreign base) leaves a program below or in it unknown, never missing.
#[test]
fn unread_layers_leave_the_program_unknown() {
    let plan = LookupPlan::new("windows", &run(&["cmd", "/S", "/C", "x"], &[], ""));
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
    let plan = LookupPlan::new("windows", &run(&["C:\\app\\driver.exe"], &[], ""));
    let check = done(resolve(
        &plan,
        &[foreign.clone(), top.clone()],
        &BTreeMap::new(),
    ));
    assert_eq!(first(&check), "found C:\\app\\driver.exe");
    // …but its DLLs could be in the unread layer: no DLL verdict.
    assert!(
        matches!(
            &check.programs[0].outcome,
            LookupOutcome::Found { dlls: Some(Err(why)), .. } if why.contains("not read")
        ),
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
    let plan = LookupPlan::new("windows", &run(&["C:\\app\\driver.exe"], &[], ""));
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
            LookupOutcome::Found {
                dlls: Some(Ok(missing)),
                ..
            } => assert_eq!(missing, &want, "{files:?}"),
            other => panic!("{other:?}"),
        }
    }
}

/// A script's interpreter is the next program (Linux `binfmt_script`: the `#!` path, taken
/// as it is); `/usr/bin/env NAME` goes on to NAME, searched in `PATH`. A file that was not a
/// target of the first read is asked for (`LookupStep::Need`).
#[test]
fn scripts_lead_to_their_interpreter() {
    let plan = LookupPlan::new("linux", &run(&["/entry.sh"], &[], ""));
    let mut scan = LayerScan::default();
    for key in ["entry.sh", "usr/bin/env", "usr/bin/python3"] {
        scan.seen.push(Seen {
            key: key.into(),
            kind: Kind::File,
            mode: 0o755,
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
        LookupStep::Need {
            layer: 0,
            key: "usr/bin/env".into()
        }
    );
    probed.insert((0, "usr/bin/env".to_string()), elf());
    assert_eq!(
        resolve(&plan, &layers, &probed),
        LookupStep::Need {
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
    let plan = LookupPlan::new("windows", &run(&["driver"], &["PATH=C:\\bin"], "C:\\app"));
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
        LookupPlan::new("linux", &RunConfig::default())
            .targets()
            .probe
            .is_empty()
    );
}

/// Issue 33, item 9: a Windows scan lists only the folders the lookup reads, so a hard link
/// into another folder (`System32\cmd.exe` to `WinSxS\…`, as base layers have) names a
/// file that was not listed: its headers are asked for, in the link's layer, and it is
/// found under the link's name.
#[test]
fn a_windows_hard_link_into_a_folder_not_read_is_found() {
    let plan = LookupPlan::new("windows", &run(&["cmd", "/S", "/C", "x"], &[], ""));
    let layers = layers_of(
        &[&["windows/system32/cmd.exe => windows/winsxs/amd64_cmd/cmd.exe"]],
        &BinaryInfo::pe_amd64_console(&[]),
    );
    let wanted = (0, "windows/winsxs/amd64_cmd/cmd.exe".to_string());
    assert_eq!(
        resolve(&plan, &layers, &BTreeMap::new()),
        LookupStep::Need {
            layer: wanted.0,
            key: wanted.1.clone()
        }
    );
    let probed = BTreeMap::from([(wanted, BinaryInfo::pe_amd64_console(&[]))]);
    let check = done(resolve(&plan, &layers, &probed));
    assert_chain("hard link", &check, "found C:\\windows\\system32\\cmd.exe");
}

/// Issue 33, item 9: an `Entrypoint` of one empty string is dropped and `Cmd` runs
/// (containerd `pkg/cri/opts/spec.go`, `WithProcessArgs`: `len(image.Entrypoint) == 1 &&
/// image.Entrypoint[0] == ""`), on Windows and Linux alike; any other entrypoint stays.
#[test]
fn an_entrypoint_of_one_empty_string_runs_the_cmd() {
    let config = |entrypoint: &[&str], cmd: &[&str]| RunConfig {
        entrypoint: entrypoint.iter().map(ToString::to_string).collect(),
        cmd: cmd.iter().map(ToString::to_string).collect(),
        ..RunConfig::default()
    };
    type ArgvRow<'a> = (&'a str, &'a [&'a str], &'a [&'a str], &'a [&'a str]);
    let rows: [ArgvRow<'_>; 4] = [
        (
            "windows",
            &[""],
            &["C:\\app\\driver.exe", "-v"],
            &["C:\\app\\driver.exe", "-v"],
        ),
        ("linux", &[""], &["/driver"], &["/driver"]),
        ("windows", &["", "x"], &["y"], &["", "x", "y"]),
        (
            "windows",
            &[],
            &["C:\\app\\driver.exe"],
            &["C:\\app\\driver.exe"],
        ),
    ];
    for (os, entrypoint, cmd, want) in rows {
        let plan = LookupPlan::new(os, &config(entrypoint, cmd));
        assert_eq!(plan.command, want, "{entrypoint:?} {cmd:?}");
    }
    let plan = LookupPlan::new("windows", &config(&[""], &["C:\\app\\driver.exe"]));
    let layers = layers_of(&[&["app/driver.exe"]], &BinaryInfo::pe_amd64_console(&[]));
    let check = done(resolve(&plan, &layers, &BTreeMap::new()));
    assert_chain("[\"\"] + Cmd", &check, "found C:\\app\\driver.exe");
}
