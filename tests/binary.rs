//! The executable header probe (`imgcheck::binary`) on real programs built here with this
//! machine's toolchains: Go 1.19 (Debian `golang-go`) cross-compiled for windows/amd64,
//! linux/arm64 and linux/arm GOARM=7 inside a fresh git repository (so `vcs.revision` is
//! stamped), and a C program linked by MinGW-w64 (Debian `gcc-mingw-w64-x86-64`) against
//! netapi32, whose import table therefore names NETAPI32.dll. A missing tool fails the test
//! with the package to install.

use imgcheck::binary::{
    BinaryFormat, BinaryInfo, ElfClass, Endian, GoBuildInfo, MAX_KEPT, Probe, dll, parse,
};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The built programs, once per test process.
struct Built {
    _dir: tempfile::TempDir,
    out: PathBuf,
    revision: String,
}

fn run(cmd: &mut Command, what: &str, package: &str) {
    let out = cmd.output().unwrap_or_else(|e| {
        panic!("{what} not found ({e}): install it with 'apt-get install {package}' (or run scripts/test)")
    });
    assert!(
        out.status.success(),
        "{what} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn git(repo: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new("git");
    cmd.current_dir(repo)
        .args([
            "-c",
            "user.name=imgcheck",
            "-c",
            "user.email=imgcheck@example.com",
        ])
        .args(args);
    cmd
}

fn built() -> &'static Built {
    static BUILT: OnceLock<Built> = OnceLock::new();
    BUILT.get_or_init(|| {
        let dir = tempfile::tempdir().expect("temporary directory");
        let (repo, out) = (dir.path().join("src"), dir.path().join("out"));
        std::fs::create_dir_all(&repo).expect("mkdir src");
        std::fs::create_dir_all(&out).expect("mkdir out");
        std::fs::write(repo.join("go.mod"), "module example.com/driver\n\ngo 1.19\n").expect("go.mod");
        std::fs::write(
            repo.join("main.go"),
            "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"driver\") }\n",
        )
        .expect("main.go");
        std::fs::write(
            repo.join("netapi.c"),
            "#include <windows.h>\n#include <lm.h>\nint main(void) { return NetApiBufferFree(0); }\n",
        )
        .expect("netapi.c");
        run(&mut git(&repo, &["init", "-q", "."]), "git", "git");
        run(&mut git(&repo, &["add", "."]), "git", "git");
        run(&mut git(&repo, &["commit", "-qm", "driver"]), "git", "git");
        let head = git(&repo, &["rev-parse", "HEAD"]).output().expect("git rev-parse");
        let revision = String::from_utf8_lossy(&head.stdout).trim().to_string();
        for (name, goos, goarch, goarm) in [
            ("driver.exe", "windows", "amd64", ""),
            ("driver-arm64", "linux", "arm64", ""),
            ("driver-armv7", "linux", "arm", "7"),
        ] {
            let mut go = Command::new("go");
            go.current_dir(&repo)
                .args(["build", "-o"])
                .arg(out.join(name))
                .arg(".")
                .env("GOCACHE", dir.path().join("gocache"))
                .env("GOPATH", dir.path().join("gopath"))
                .env("GOFLAGS", "-mod=mod")
                .env("GO111MODULE", "on")
                .env("CGO_ENABLED", "0")
                .env("GOOS", goos)
                .env("GOARCH", goarch)
                .env("GOARM", goarm);
            run(&mut go, "go (Go toolchain)", "golang-go");
        }
        let mut cc = Command::new("x86_64-w64-mingw32-gcc");
        cc.arg("-o").arg(out.join("netapi.exe")).arg(repo.join("netapi.c")).arg("-lnetapi32");
        run(&mut cc, "x86_64-w64-mingw32-gcc", "gcc-mingw-w64-x86-64");
        Built { _dir: dir, out, revision }
    })
}

/// Probes a built program fed in 64 KiB chunks, stopping as soon as the probe wants no more;
/// checks the kept bytes stay small and the answer equals a whole-file parse.
fn probe(name: &str) -> BinaryInfo {
    let bytes = std::fs::read(built().out.join(name)).expect("read built program");
    let mut probe = Probe::new(bytes.len() as u64);
    for chunk in bytes.chunks(64 << 10) {
        if !probe.wants_more() {
            break;
        }
        probe.feed(chunk);
    }
    assert!(
        probe.kept() <= 256 << 10 && probe.kept() <= MAX_KEPT,
        "{name}: kept {}",
        probe.kept()
    );
    let info = probe.finish();
    assert_eq!(
        info,
        parse(&bytes),
        "{name}: streamed and whole answers differ"
    );
    assert!(info.incomplete.is_empty(), "{name}: {:?}", info.incomplete);
    info
}

fn go_info(info: &BinaryInfo) -> &GoBuildInfo {
    info.go
        .as_ref()
        .unwrap_or_else(|| panic!("no Go build information: {info:?}"))
}

#[test]
fn go_windows_amd64_is_a_pe_amd64_console_program() {
    let info = probe("driver.exe");
    let BinaryFormat::Pe(pe) = &info.format else {
        panic!("not PE: {info:?}")
    };
    assert_eq!(
        (pe.machine, pe.magic, pe.subsystem),
        (0x8664, Some(0x20b), Some(3))
    );
    assert!(
        pe.imports
            .iter()
            .any(|d| d.eq_ignore_ascii_case("kernel32.dll")),
        "{:?}",
        pe.imports
    );
    let go = go_info(&info);
    assert_eq!(
        (go.goos.as_deref(), go.goarch.as_deref()),
        (Some("windows"), Some("amd64"))
    );
    assert_eq!(go.revision.as_deref(), Some(built().revision.as_str()));
    assert_eq!(go.modified, Some(false));
    assert_eq!(go.path, "example.com/driver");
    assert!(go.go_version.starts_with("go1."), "{}", go.go_version);
    assert_eq!(info.platform_mismatch("windows", "amd64", None), None);
    let arm64 = info
        .platform_mismatch("windows", "arm64", None)
        .expect("mismatch on arm64");
    assert!(arm64.starts_with("PE32+ AMD64 console"), "{arm64}");
    assert!(info.platform_mismatch("linux", "amd64", None).is_some());
}

#[test]
fn go_linux_arm64_is_an_aarch64_elf() {
    let info = probe("driver-arm64");
    let BinaryFormat::Elf(elf) = &info.format else {
        panic!("not ELF: {info:?}")
    };
    assert_eq!(
        (elf.class, elf.endian, elf.machine),
        (ElfClass::Elf64, Endian::Little, 183)
    );
    let go = go_info(&info);
    assert_eq!(
        (go.goos.as_deref(), go.goarch.as_deref()),
        (Some("linux"), Some("arm64"))
    );
    assert_eq!(go.revision.as_deref(), Some(built().revision.as_str()));
    assert_eq!(info.platform_mismatch("linux", "arm64", None), None);
    let amd64 = info
        .platform_mismatch("linux", "amd64", None)
        .expect("an arm64 binary on amd64");
    assert!(amd64.contains("ELF 64-bit LSB AArch64"), "{amd64}");
    assert!(info.platform_mismatch("windows", "amd64", None).is_some());
}

#[test]
fn go_linux_arm_v7_needs_v7() {
    let info = probe("driver-armv7");
    let BinaryFormat::Elf(elf) = &info.format else {
        panic!("not ELF: {info:?}")
    };
    assert_eq!(
        (elf.class, elf.endian, elf.machine),
        (ElfClass::Elf32, Endian::Little, 40)
    );
    assert_eq!(go_info(&info).goarm.as_deref(), Some("7"));
    assert_eq!(info.platform_mismatch("linux", "arm", Some("v7")), None);
    let v6 = info
        .platform_mismatch("linux", "arm", Some("v6"))
        .expect("GOARM=7 on v6");
    assert!(v6.contains("GOARM=7"), "{v6}");
}

#[test]
fn mingw_program_imports_netapi32() {
    let info = probe("netapi.exe");
    let BinaryFormat::Pe(pe) = &info.format else {
        panic!("not PE: {info:?}")
    };
    assert_eq!(pe.machine, 0x8664);
    assert!(info.go.is_none());
    assert!(
        pe.imports
            .iter()
            .any(|d| d.eq_ignore_ascii_case("netapi32.dll")),
        "{:?}",
        pe.imports
    );
    let mut provided: BTreeSet<String> = pe
        .imports
        .iter()
        .filter(|d| !d.eq_ignore_ascii_case("netapi32.dll"))
        .map(|d| d.to_ascii_lowercase())
        .collect();
    let missing = dll::missing(&pe.imports, &provided);
    assert_eq!(missing.len(), 1, "{missing:?}");
    assert!(missing[0].eq_ignore_ascii_case("netapi32.dll"));
    provided.insert("netapi32.dll".to_string());
    assert!(dll::missing(&pe.imports, &provided).is_empty());
}
