//! Table tests over hand-made headers (one row per branch, each naming the specification
//! section it follows).

use super::*;

/// A minimal PE image: MS-DOS header with e_lfanew = 0x40, `PE\0\0`, COFF header, a PE32+
/// optional header (magic 0x20b, Subsystem at 68, 16 data directories from 112), one
/// section `.idata` (RVA 0x1000, file offset 0x200) holding an import directory table with
/// the given DLL names ("PE Format": "MS-DOS Stub", "COFF File Header", "Optional Header
/// Windows-Specific Fields", "Section Table", "The .idata Section").
pub(super) fn pe_image(machine: u16, subsystem: u16, dlls: &[&str]) -> Vec<u8> {
    let mut f = vec![0u8; 0x200];
    f[..2].copy_from_slice(b"MZ");
    f[0x3c..0x40].copy_from_slice(&0x40u32.to_le_bytes());
    f[0x40..0x44].copy_from_slice(b"PE\0\0");
    let coff = 0x44;
    f[coff..coff + 2].copy_from_slice(&machine.to_le_bytes());
    f[coff + 2..coff + 4].copy_from_slice(&1u16.to_le_bytes());
    f[coff + 16..coff + 18].copy_from_slice(&240u16.to_le_bytes());
    let opt = coff + 20;
    f[opt..opt + 2].copy_from_slice(&0x20bu16.to_le_bytes());
    f[opt + 68..opt + 70].copy_from_slice(&subsystem.to_le_bytes());
    f[opt + 108..opt + 112].copy_from_slice(&16u32.to_le_bytes());
    // Data directory 1 (import table): RVA 0x1000.
    f[opt + 120..opt + 124].copy_from_slice(&0x1000u32.to_le_bytes());
    f[opt + 124..opt + 128].copy_from_slice(&(20 * (dlls.len() as u32 + 1)).to_le_bytes());
    let names: usize = dlls.iter().map(|d| d.len() + 1).sum();
    let size = (20 * (dlls.len() + 1) + names).next_multiple_of(0x200);
    let raw = u32::try_from(size).unwrap();
    let sect = opt + 240;
    f[sect..sect + 6].copy_from_slice(b".idata");
    f[sect + 8..sect + 12].copy_from_slice(&raw.to_le_bytes());
    f[sect + 12..sect + 16].copy_from_slice(&0x1000u32.to_le_bytes());
    f[sect + 16..sect + 20].copy_from_slice(&raw.to_le_bytes());
    f[sect + 20..sect + 24].copy_from_slice(&0x200u32.to_le_bytes());
    f[sect + 36..sect + 40].copy_from_slice(&0xc000_0040u32.to_le_bytes());
    let mut idata = vec![0u8; size];
    let mut name_at = 20 * (dlls.len() + 1);
    for (i, dll) in dlls.iter().enumerate() {
        let rva = 0x1000 + name_at as u32;
        idata[i * 20 + 12..i * 20 + 16].copy_from_slice(&rva.to_le_bytes());
        idata[name_at..name_at + dll.len()].copy_from_slice(dll.as_bytes());
        name_at += dll.len() + 1;
    }
    f.extend_from_slice(&idata);
    f
}

/// A minimal ELF header (gABI "ELF Header"): class, data encoding and e_machine, no program
/// or section headers.
pub(super) fn elf_header(class: u8, data: u8, machine: u16) -> Vec<u8> {
    let mut f = vec![0u8; 64];
    f[..4].copy_from_slice(b"\x7fELF");
    f[4] = class;
    f[5] = data;
    f[6] = 1;
    let m = if data == 2 {
        machine.to_be_bytes()
    } else {
        machine.to_le_bytes()
    };
    f[18..20].copy_from_slice(&m);
    f
}

/// Go's buildinfo blob (`debug/buildinfo` `readRawBuildInfo`): the 14-byte magic, pointer
/// size, flags (2 = inline strings, Go 1.18 on), padding to the 32-byte header, then the
/// version and the module text as uvarint-prefixed strings, the module text framed by 16-byte
/// sentinels.
pub(super) fn go_blob(version: &str, modinfo: &str, flags: u8) -> Vec<u8> {
    let mut b = b"\xff Go buildinf:".to_vec();
    b.extend([8, flags]);
    b.resize(32, 0);
    let framed = format!("{0}{modinfo}{0}", "x".repeat(16));
    for s in [version, framed.as_str()] {
        let mut len = s.len();
        while len > 0x7f {
            b.push((len & 0x7f) as u8 | 0x80);
            len >>= 7;
        }
        b.push(len as u8);
        b.extend_from_slice(s.as_bytes());
    }
    // Go's decodeString wants bytes after the last string; the linker's data follows.
    b.extend([0u8; 16]);
    b
}

/// A 32-bit little-endian ARM ELF (gABI "ELF Header", "Program Header", "Section Header"):
/// one writable PT_LOAD at 0x100 holding `data` (where Go looks for its buildinfo blob), and,
/// with `cpu_arch`, an SHT_ARM_ATTRIBUTES section whose "aeabi" file attributes give
/// Tag_CPU_name "7-A", Tag_CPU_arch and Tag_ARM_ISA_use (ARM IHI 0044 "Build Attributes").
pub(super) fn elf_arm(cpu_arch: Option<u8>, data: &[u8]) -> Vec<u8> {
    let mut f = elf_header(1, 1, 40);
    f.truncate(52);
    f[28..32].copy_from_slice(&52u32.to_le_bytes());
    f[42..44].copy_from_slice(&32u16.to_le_bytes());
    f[44..46].copy_from_slice(&1u16.to_le_bytes());
    let mut ph = vec![0u8; 32];
    ph[0..4].copy_from_slice(&1u32.to_le_bytes());
    ph[4..8].copy_from_slice(&0x100u32.to_le_bytes());
    ph[16..20].copy_from_slice(&(data.len() as u32).to_le_bytes());
    ph[24..28].copy_from_slice(&6u32.to_le_bytes());
    f.extend(ph);
    f.resize(0x100, 0);
    f.extend_from_slice(data);
    f.resize(f.len().next_multiple_of(16), 0);
    let Some(arch) = cpu_arch else { return f };
    let attrs = [&[5u8][..], b"7-A\0", &[6, arch, 8, 1]].concat();
    let mut sub = b"aeabi\0".to_vec();
    sub.push(1);
    sub.extend(((5 + attrs.len()) as u32).to_le_bytes());
    sub.extend(attrs);
    let at = f.len();
    f.push(b'A');
    f.extend(((4 + sub.len()) as u32).to_le_bytes());
    f.extend(&sub);
    let size = f.len() - at;
    f.resize(f.len().next_multiple_of(4), 0);
    let shoff = f.len();
    f[32..36].copy_from_slice(&(shoff as u32).to_le_bytes());
    f[46..48].copy_from_slice(&40u16.to_le_bytes());
    f[48..50].copy_from_slice(&2u16.to_le_bytes());
    f.extend([0u8; 40]);
    let mut sh = vec![0u8; 40];
    sh[4..8].copy_from_slice(&0x7000_0003u32.to_le_bytes());
    sh[16..20].copy_from_slice(&(at as u32).to_le_bytes());
    sh[20..24].copy_from_slice(&(size as u32).to_le_bytes());
    f.extend(sh);
    f
}

fn put(mut f: Vec<u8>, at: usize, bytes: &[u8]) -> Vec<u8> {
    f[at..at + bytes.len()].copy_from_slice(bytes);
    f
}

/// Offsets in [`pe_image`]: COFF header, optional header, first section entry, `.idata` data.
const COFF: usize = 0x44;
const OPT: usize = COFF + 20;
const SECT: usize = OPT + 240;
const IDATA: usize = 0x200;

/// Description rows: name (the specification section), file, `describe()`.
type DescriptionRow = (&'static str, Vec<u8>, &'static str);

fn pe_description_rows() -> Vec<DescriptionRow> {
    let amd64 = pe_image(0x8664, 3, &["KERNEL32.dll"]);
    vec![
        ("empty file", vec![], "not an executable: empty file"),
        (
            "PE Format: Machine 0x8664, PE32+ magic 0x20b, Subsystem 3",
            amd64.clone(),
            "PE32+ AMD64 console",
        ),
        (
            "PE Format: Machine 0xaa64, Subsystem 2",
            pe_image(0xaa64, 2, &[]),
            "PE32+ ARM64 GUI",
        ),
        (
            "PE Format: PE32 magic 0x10b",
            put(amd64.clone(), OPT, &0x10bu16.to_le_bytes()),
            "PE32 AMD64 console",
        ),
        (
            "PE Format: unknown Machine",
            pe_image(0x1234, 3, &[]),
            "PE32+ machine 0x1234 console",
        ),
        (
            "PE Format: unknown optional header magic",
            put(amd64.clone(), OPT, &[7, 7]),
            "PE32 AMD64",
        ),
        (
            "MS-DOS stub: e_lfanew at 0x3c cut off",
            b"MZ\x90\0".to_vec(),
            "not an executable: MZ header truncated (4 bytes, e_lfanew is at 0x3c)",
        ),
        (
            "PE Format: no PE\\0\\0 at e_lfanew",
            put(amd64.clone(), 0x40, b"NE\0\0"),
            "not an executable: MZ header without a PE signature at e_lfanew",
        ),
        (
            "PE Format: COFF header cut off",
            amd64[..0x50].to_vec(),
            "not an executable: COFF file header truncated (16 of 24 bytes)",
        ),
    ]
}

fn other_description_rows() -> Vec<DescriptionRow> {
    vec![
        (
            "gABI: ELFCLASS64 ELFDATA2LSB EM_X86_64 62",
            elf_header(2, 1, 62),
            "ELF 64-bit LSB x86-64",
        ),
        (
            "gABI: EM_AARCH64 183",
            elf_header(2, 1, 183),
            "ELF 64-bit LSB AArch64",
        ),
        (
            "gABI: EM_PPC64 21",
            elf_header(2, 1, 21),
            "ELF 64-bit LSB 64-bit PowerPC",
        ),
        (
            "gABI: ELFDATA2MSB EM_S390 22",
            elf_header(2, 2, 22),
            "ELF 64-bit MSB IBM S/390",
        ),
        (
            "gABI: EM_RISCV 243",
            elf_header(2, 1, 243),
            "ELF 64-bit LSB RISC-V",
        ),
        (
            "gABI: ELFCLASS32 EM_ARM 40, no attributes",
            elf_arm(None, &[]),
            "ELF 32-bit LSB ARM",
        ),
        (
            "gABI: unknown e_machine",
            elf_header(2, 1, 9999),
            "ELF 64-bit LSB machine 9999",
        ),
        (
            "gABI: EI_CLASS 3",
            elf_header(3, 1, 62),
            "not an executable: ELF with unknown class 3",
        ),
        (
            "gABI: EI_DATA 0",
            elf_header(2, 0, 62),
            "not an executable: ELF with unknown data encoding 0",
        ),
        (
            "gABI: header cut off",
            elf_header(2, 1, 62)[..40].to_vec(),
            "not an executable: ELF header truncated (40 bytes)",
        ),
        (
            "ELF identification cut off",
            b"\x7fELF".to_vec(),
            "not an executable: ELF identification truncated",
        ),
    ]
}

fn script_description_rows() -> Vec<DescriptionRow> {
    vec![
        (
            "binfmt_script",
            b"#!/bin/sh -e\necho\n".to_vec(),
            "script #!/bin/sh",
        ),
        (
            "binfmt_script: blanks before the interpreter",
            b"#! \t/usr/bin/env  python3 \n".to_vec(),
            "script #!/usr/bin/env",
        ),
        (
            "binfmt_script: no interpreter",
            b"#!\n".to_vec(),
            "not an executable: #! line names no interpreter",
        ),
        (
            "binfmt_script: name past 256 bytes",
            [b"#!/".as_slice(), &[b'a'; 300]].concat(),
            "not an executable: #! interpreter name runs past the kernel's 256-byte buffer",
        ),
        (
            "unknown magic",
            b"\0\x01\x02\x03 data".to_vec(),
            "not an executable: not PE, ELF or a #! script (starts with 00 01 02 03)",
        ),
    ]
}

#[test]
fn formats_and_descriptions() {
    for (name, bytes, want) in pe_description_rows()
        .into_iter()
        .chain(other_description_rows())
        .chain(script_description_rows())
    {
        assert_eq!(parse(&bytes).describe(), want, "{name}");
    }
}

#[test]
fn script_lines_as_linux_reads_them() {
    let rows: Vec<(&[u8], &str, Option<&str>)> = vec![
        (b"#!/bin/sh\n", "/bin/sh", None),
        (
            b"#!/usr/bin/env python3 -u\n",
            "/usr/bin/env",
            Some("python3 -u"),
        ),
        (b"#!/bin/sh\r\n", "/bin/sh\r", None), // a CRLF script: the kernel looks up "/bin/sh\r"
        (b"#!/bin/bash", "/bin/bash", None),
        (b"#!/bin/sh\0x\n", "/bin/sh", None),
    ];
    for (bytes, interpreter, args) in rows {
        let want = BinaryFormat::Script {
            interpreter: interpreter.to_string(),
            args: args.map(str::to_string),
        };
        assert_eq!(
            parse(bytes).format,
            want,
            "{:?}",
            String::from_utf8_lossy(bytes)
        );
    }
}

#[test]
fn pe_imports_are_read_once_each() {
    let info = parse(&pe_image(
        0x8664,
        3,
        &["KERNEL32.dll", "NETAPI32.dll", "kernel32.DLL"],
    ));
    let BinaryFormat::Pe(pe) = info.format else {
        panic!("not PE: {info:?}")
    };
    assert_eq!(pe.imports, ["KERNEL32.dll", "NETAPI32.dll"]);
    assert!(info.incomplete.is_empty(), "{:?}", info.incomplete);
}

/// Broken PE files give a bounded answer that names the problem.
#[test]
fn hostile_pe_is_named() {
    let good = pe_image(0x8664, 3, &["KERNEL32.dll"]);
    let name_rva = IDATA + 12;
    let mut endless = good.clone();
    for i in 0..(0x200 / 20) {
        endless[IDATA + i * 20..IDATA + i * 20 + 4].copy_from_slice(&[1, 0, 0, 0]);
    }
    let rows: Vec<(&str, Vec<u8>, &str)> = vec![
        (
            "e_lfanew past the end",
            put(good.clone(), 0x3c, &0xffff_fff0u32.to_le_bytes()),
            "lies past the end of the file",
        ),
        (
            "import directory in no section",
            put(good.clone(), OPT + 120, &0x9000u32.to_le_bytes()),
            "lies in no section's file data",
        ),
        (
            "DLL name outside the section",
            put(good.clone(), name_rva, &0x5000u32.to_le_bytes()),
            "lies outside the import section",
        ),
        (
            "DLL name unterminated",
            {
                let mut f = good.clone();
                f.truncate(IDATA + 40 + 12);
                f.resize(IDATA + 0x200, b'A');
                f
            },
            "unterminated or longer than 260 bytes",
        ),
        (
            "descriptor table without its zero entry",
            endless,
            "import directory table runs past the kept bytes",
        ),
        (
            "65535 sections claimed",
            put(good.clone(), COFF + 2, &0xffffu16.to_le_bytes()),
            "of 65535 entries read",
        ),
        (
            "import section cut off by the end of the file",
            good[..IDATA + 30].to_vec(),
            "runs past the kept bytes",
        ),
    ];
    for (name, bytes, want) in rows {
        let info = parse(&bytes);
        assert!(
            info.incomplete.iter().any(|p| p.contains(want)),
            "{name}: {want:?} not in {:?}",
            info.incomplete
        );
    }
}

#[test]
fn pe_import_section_over_the_cap_is_cut_and_named() {
    let mut f = pe_image(0x8664, 3, &["KERNEL32.dll"]);
    let big = 6u32 << 20;
    f = put(f, SECT + 16, &big.to_le_bytes());
    f.resize(IDATA + big as usize, 0);
    let mut probe = Probe::new(f.len() as u64);
    probe.feed(&f);
    assert!(probe.kept() <= MAX_KEPT);
    let info = probe.finish();
    assert!(
        info.incomplete
            .iter()
            .any(|p| p.contains("per-file cap is 4194304 bytes")),
        "{:?}",
        info.incomplete
    );
    let BinaryFormat::Pe(pe) = info.format else {
        panic!()
    };
    assert_eq!(pe.imports, ["KERNEL32.dll"]);
}

/// ARM EABI Tag_CPU_arch values (ARM IHI 0045 "Addenda", Tag_CPU_arch: 6 v6, 10 v7, 14 v8-A).
#[test]
fn arm_attributes_give_the_variant() {
    let rows: Vec<(Option<u8>, Option<&str>, &str)> = vec![
        (Some(6), Some("v6"), "ELF 32-bit LSB ARM v6"),
        (Some(8), Some("v6"), "ELF 32-bit LSB ARM v6"),
        (Some(10), Some("v7"), "ELF 32-bit LSB ARM v7"),
        (Some(14), Some("v8"), "ELF 32-bit LSB ARM v8"),
        (Some(4), Some("v5"), "ELF 32-bit LSB ARM v5"),
        (Some(13), None, "ELF 32-bit LSB ARM"),
        (None, None, "ELF 32-bit LSB ARM"),
    ];
    for (arch, variant, text) in rows {
        let info = parse(&elf_arm(arch, &[]));
        let BinaryFormat::Elf(elf) = &info.format else {
            panic!("{info:?}")
        };
        assert_eq!(elf.arm_arch.and_then(ArmArch::variant), variant, "{arch:?}");
        assert_eq!(info.describe(), text);
        assert!(
            info.incomplete.is_empty(),
            "{arch:?}: {:?}",
            info.incomplete
        );
    }
    let mut bad = elf_arm(Some(10), &[]);
    let at = bad.windows(6).position(|w| w == b"aeabi\0").unwrap_or(5) - 5;
    bad[at] = b'B';
    let info = parse(&bad);
    assert!(
        info.incomplete
            .iter()
            .any(|p| p.contains("unknown format version")),
        "{info:?}"
    );
}

/// Go's `readRawBuildInfo` and `ParseBuildInfo` over hand-made blobs.
#[test]
fn go_buildinfo_blobs() {
    let modinfo = "path\texample.com/cmd/driver\nmod\texample.com\tv1.2.3\th1:x=\nbuild\tGOARCH=arm\nbuild\tGOOS=linux\nbuild\tGOARM=7\nbuild\tvcs.revision=0123abcd\nbuild\tvcs.modified=false\n";
    let info = parse(&elf_arm(None, &go_blob("go1.21.0", modinfo, 2)));
    let go = info.go.expect("Go buildinfo");
    assert_eq!(
        go,
        GoBuildInfo {
            go_version: "go1.21.0".into(),
            path: "example.com/cmd/driver".into(),
            main_module: Some("example.com".into()),
            main_version: Some("v1.2.3".into()),
            goos: Some("linux".into()),
            goarch: Some("arm".into()),
            goarm: Some("7".into()),
            revision: Some("0123abcd".into()),
            modified: Some(false),
            deps: vec![],
            csi_proxy_apis: vec![],
        }
    );
    let rows: Vec<(&str, Vec<u8>, bool, &str)> = vec![
        (
            "pre-1.18 pointer format",
            go_blob("go1.17", modinfo, 0),
            false,
            "pointer format was not read",
        ),
        (
            "quoted GOOS value",
            go_blob("go1.21.0", "build\tGOOS=\"li nux\"\n", 2),
            true,
            "GOOS has a quoted value",
        ),
        (
            "version overruns the window",
            {
                let mut b = go_blob("go1.21.0", "", 2);
                b.truncate(36);
                b
            },
            false,
            "version string overruns",
        ),
        (
            "module text overruns the window",
            {
                let mut b = go_blob("go1.21.0", modinfo, 2);
                b.truncate(60);
                b
            },
            true,
            "module string overruns",
        ),
        (
            "magic off the 16-byte boundary",
            [&[0u8; 8][..], &go_blob("go1.21.0", modinfo, 2)].concat(),
            false,
            "",
        ),
    ];
    for (name, blob, is_go, problem) in rows {
        let info = parse(&elf_arm(None, &blob));
        assert_eq!(info.go.is_some(), is_go, "{name}: {info:?}");
        if !problem.is_empty() {
            assert!(
                info.incomplete.iter().any(|p| p.contains(problem)),
                "{name}: {:?}",
                info.incomplete
            );
        }
    }
}

/// The same answer whatever the chunk size; the probe keeps only the headers it needs, and
/// wants an executable's bytes to its end (the CSI Proxy package search) but a script's only
/// up to its header.
#[test]
fn chunking_does_not_change_the_answer() {
    let mut padded = pe_image(0x8664, 3, &["KERNEL32.dll", "NETAPI32.dll"]);
    padded.resize(1 << 20, 0);
    let samples = [
        padded,
        elf_arm(Some(10), &go_blob("go1.21.0", "build\tGOOS=linux\n", 2)),
        b"#!/bin/sh\n".to_vec(),
    ];
    for sample in &samples {
        let whole = parse(sample);
        for size in [1, 3, 17, 4096] {
            let mut probe = Probe::new(sample.len() as u64);
            for chunk in sample.chunks(size) {
                probe.feed(chunk);
            }
            assert_eq!(probe.finish(), whole, "chunk size {size}");
        }
    }
    let mut probe = Probe::new(samples[0].len() as u64);
    probe.feed(&samples[0][..4096]);
    assert!(probe.wants_more(), "an executable is searched to its end");
    assert!(probe.kept() < 8192, "kept {}", probe.kept());
    probe.feed(&samples[0][4096..]);
    assert!(!probe.wants_more());
    assert!(probe.kept() < 8192, "kept {}", probe.kept());
    let mut script = Probe::new(1 << 20);
    script.feed(&[b"#!/bin/sh\n".as_slice(), &[b' '; 4096]].concat());
    assert!(
        !script.wants_more(),
        "a script's first 4 KiB hold all it needs"
    );
}

#[test]
fn a_stream_that_ends_early_is_named() {
    let f = pe_image(0x8664, 3, &["KERNEL32.dll"]);
    let mut probe = Probe::new(f.len() as u64 + 100);
    probe.feed(&f[..0x100]);
    let info = probe.finish();
    assert!(
        info.incomplete
            .iter()
            .any(|p| p.contains("the file ended at byte 256 of 1124")),
        "{info:?}"
    );
}

/// One platform_mismatch row: name, probed file, entry platform, expected reason (a part).
type MismatchRow<'a> = (
    &'a str,
    &'a BinaryInfo,
    (&'a str, &'a str, Option<&'a str>),
    Option<&'a str>,
);

/// Probed files the platform_mismatch rows check.
struct Infos {
    amd64: BinaryInfo,
    elf_x86: BinaryInfo,
    arm7: BinaryInfo,
    go7: BinaryInfo,
    go6: BinaryInfo,
    gowin: BinaryInfo,
    script: BinaryInfo,
    text: BinaryInfo,
}

fn infos() -> Infos {
    let amd64 = parse(&pe_image(0x8664, 3, &[]));
    let elf_x86 = parse(&elf_header(2, 1, 62));
    let arm7 = parse(&elf_arm(Some(10), &[]));
    let go = |goos: &str, goarch: &str, goarm: &str| {
        let text = format!("build\tGOARCH={goarch}\nbuild\tGOOS={goos}\nbuild\tGOARM={goarm}\n");
        parse(&elf_arm(None, &go_blob("go1.21.0", &text, 2)))
    };
    let (go7, go6, gowin) = (
        go("linux", "arm", "7"),
        go("linux", "arm", "6"),
        go("windows", "arm", "7"),
    );
    let script = parse(b"#!/bin/sh\n");
    let text = parse(b"hello");
    Infos {
        amd64,
        elf_x86,
        arm7,
        go7,
        go6,
        gowin,
        script,
        text,
    }
}

#[test]
fn platform_mismatch_windows_and_format_rows() {
    let i = infos();
    let rows: Vec<MismatchRow> = vec![
        (
            "PE AMD64 on windows/amd64",
            &i.amd64,
            ("windows", "amd64", None),
            None,
        ),
        (
            "PE AMD64 on windows/arm64",
            &i.amd64,
            ("windows", "arm64", None),
            Some("PE32+ AMD64 console: PE machine is not ARM64 (arm64)"),
        ),
        (
            "ELF on windows",
            &i.elf_x86,
            ("windows", "amd64", None),
            Some("ELF 64-bit LSB x86-64: not a Windows PE executable"),
        ),
        (
            "PE on linux",
            &i.amd64,
            ("linux", "amd64", None),
            Some("PE32+ AMD64 console: not a Linux ELF executable"),
        ),
        // Issue 33, item 9: CreateProcess reads no #! line (Microsoft, "CreateProcessW":
        // a PE image or a .bat/.cmd through cmd.exe), so a script is no Windows program.
        (
            "#! script on windows",
            &i.script,
            ("windows", "amd64", None),
            Some("script #!/bin/sh: not a Windows PE executable"),
        ),
    ];
    check_mismatch(rows);
}

#[test]
fn platform_mismatch_linux_rows() {
    let i = infos();
    let rows: Vec<MismatchRow> = vec![
        (
            "ELF x86-64 on linux/amd64",
            &i.elf_x86,
            ("linux", "amd64", None),
            None,
        ),
        (
            "ELF x86-64 on linux/arm64",
            &i.elf_x86,
            ("linux", "arm64", None),
            Some("ELF 64-bit LSB x86-64: arm64 needs ELF 64-bit LSB AArch64"),
        ),
        (
            "ELF x86-64 on linux/s390x",
            &i.elf_x86,
            ("linux", "s390x", None),
            Some("ELF 64-bit LSB x86-64: s390x needs ELF 64-bit MSB IBM S/390"),
        ),
        (
            "script on linux: its interpreter is judged",
            &i.script,
            ("linux", "amd64", None),
            None,
        ),
        (
            "text file on linux",
            &i.text,
            ("linux", "amd64", None),
            Some(
                "not an executable: not PE, ELF or a #! script (starts with 68 65 6c 6c): not a Linux ELF executable",
            ),
        ),
        (
            "an OS this check does not know",
            &i.elf_x86,
            ("freebsd", "amd64", None),
            None,
        ),
        (
            "an architecture this check does not know",
            &i.elf_x86,
            ("linux", "sparc64", None),
            None,
        ),
    ];
    check_mismatch(rows);
}

#[test]
fn platform_mismatch_arm_and_go_rows() {
    let i = infos();
    let rows: Vec<MismatchRow> = vec![
        (
            "ARM v7 on linux/arm/v7",
            &i.arm7,
            ("linux", "arm", Some("v7")),
            None,
        ),
        (
            "ARM v7 on linux/arm (v7 by default)",
            &i.arm7,
            ("linux", "arm", None),
            None,
        ),
        (
            "ARM v7 on linux/arm/v8",
            &i.arm7,
            ("linux", "arm", Some("v8")),
            None,
        ),
        (
            "ARM v7 on linux/arm/v6",
            &i.arm7,
            ("linux", "arm", Some("v6")),
            Some("ELF 32-bit LSB ARM v7: built for ARM v7, the entry is v6"),
        ),
        (
            "Go linux/arm GOARM=7 on linux/arm/v6",
            &i.go7,
            ("linux", "arm", Some("v6")),
            Some("Go build with GOARM=7, the entry is v6"),
        ),
        (
            "Go linux/arm GOARM=6 on linux/arm/v7",
            &i.go6,
            ("linux", "arm", Some("v7")),
            None,
        ),
        (
            "Go GOOS=windows inside an ARM ELF",
            &i.gowin,
            ("linux", "arm", None),
            Some("Go build for windows/arm"),
        ),
    ];
    check_mismatch(rows);
}

fn check_mismatch(rows: Vec<MismatchRow>) {
    for (name, info, (os, arch, variant), want) in rows {
        let got = info.platform_mismatch(os, arch, variant);
        match want {
            None => assert_eq!(got, None, "{name}"),
            Some(w) => assert!(
                got.as_deref().is_some_and(|g| g.contains(w)),
                "{name}: {got:?}"
            ),
        }
    }
}

#[test]
fn dll_rows() {
    let rows = [
        ("api-ms-win-core-synch-l1-2-0.dll", true),
        ("API-MS-WIN-CRT-RUNTIME-L1-1-0.DLL", true),
        ("ext-ms-win-ntuser-window-l1-1-0.dll", true),
        ("kernel32.dll", false),
        ("netapi32.dll", false),
        ("apisetschema.dll", false),
    ];
    for (name, api_set) in rows {
        assert_eq!(dll::is_api_set(name), api_set, "{name}");
    }
    let imports: Vec<String> = [
        "KERNEL32.dll",
        "NETAPI32.dll",
        "api-ms-win-core-file-l1-1-0.dll",
        "netapi32.DLL",
        "ws2_32.dll",
    ]
    .map(String::from)
    .to_vec();
    let provided: std::collections::BTreeSet<String> =
        ["kernel32.dll", "WS2_32.DLL"].map(String::from).into();
    assert_eq!(dll::missing(&imports, &provided), ["NETAPI32.dll"]);
    let all: std::collections::BTreeSet<String> = ["Kernel32.dll", "netapi32.dll", "ws2_32.dll"]
        .map(String::from)
        .into();
    assert!(dll::missing(&imports, &all).is_empty());
}

/// Issue 33, item 11: an import table of 60,000 distinct DLL names (what fits in the kept
/// bytes) is read, and checked against the image, with one set lookup per name. Keeping the
/// first of each name by scanning the names kept so far took 10.7 s for this table; here
/// the dedup helper itself counts its comparisons: about n log2 n, never n²/2 (1.8e9).
#[test]
fn dll_names_are_checked_in_linear_time() {
    use std::cell::Cell;
    thread_local!(static COMPARED: Cell<u64> = const { Cell::new(0) });
    #[derive(PartialEq, Eq)]
    struct Counted(String);
    impl PartialOrd for Counted {
        fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
            Some(self.cmp(other))
        }
    }
    impl Ord for Counted {
        fn cmp(&self, other: &Self) -> std::cmp::Ordering {
            COMPARED.with(|c| c.set(c.get() + 1));
            self.0.cmp(&other.0)
        }
    }
    const N: usize = 60_000;
    let names: Vec<String> = (0..N).map(|i| format!("d{i:05}.dll")).collect();
    let kept = dll::first_of_each(names.iter().chain(&names), |n| {
        Counted(n.to_ascii_lowercase())
    });
    assert_eq!(kept.len(), N);
    let compared = COMPARED.with(Cell::get);
    // 2n inserts into a B-tree of n keys: a few comparisons per level (a node's keys are
    // scanned), 16 levels of log2 n: well under 64 per insert; n²/2 would be 1.8e9.
    assert!(compared <= 2 * N as u64 * 64, "{compared} comparisons");
    // The whole path: the PE reader keeps each name once, the check lists each missing once.
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let info = parse(&pe_image(0x8664, 3, &refs));
    let BinaryFormat::Pe(pe) = info.format else {
        panic!("not PE: {:?}", info.incomplete)
    };
    assert_eq!(pe.imports.len(), N, "{:?}", info.incomplete);
    let provided: std::collections::BTreeSet<String> = ["D00000.DLL".to_string()].into();
    assert_eq!(dll::missing(&pe.imports, &provided).len(), N - 1);
}
