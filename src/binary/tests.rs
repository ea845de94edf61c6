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
    let sect = opt + 240;
    f[sect..sect + 6].copy_from_slice(b".idata");
    f[sect + 8..sect + 12].copy_from_slice(&0x200u32.to_le_bytes());
    f[sect + 12..sect + 16].copy_from_slice(&0x1000u32.to_le_bytes());
    f[sect + 16..sect + 20].copy_from_slice(&0x200u32.to_le_bytes());
    f[sect + 20..sect + 24].copy_from_slice(&0x200u32.to_le_bytes());
    f[sect + 36..sect + 40].copy_from_slice(&0xc000_0040u32.to_le_bytes());
    let mut idata = vec![0u8; 0x200];
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

#[test]
fn formats_and_descriptions() {
    let rows: Vec<(&str, Vec<u8>, &str)> = vec![
        ("empty", vec![], "not an executable: empty file"),
        (
            "PE32+ AMD64 console (PE Format: Machine 0x8664, Subsystem 3)",
            pe_image(0x8664, 3, &["KERNEL32.dll"]),
            "PE32+ AMD64 console",
        ),
        (
            "PE32+ ARM64 GUI (Machine 0xaa64, Subsystem 2)",
            pe_image(0xaa64, 2, &[]),
            "PE32+ ARM64 GUI",
        ),
        (
            "ELF64 LSB x86-64 (gABI: ELFCLASS64, ELFDATA2LSB, EM_X86_64 62)",
            elf_header(2, 1, 62),
            "ELF 64-bit LSB x86-64",
        ),
        (
            "ELF64 MSB s390 (EM_S390 22)",
            elf_header(2, 2, 22),
            "ELF 64-bit MSB IBM S/390",
        ),
        (
            "script",
            b"#!/bin/sh -e\necho\n".to_vec(),
            "script #!/bin/sh",
        ),
    ];
    for (name, bytes, want) in rows {
        assert_eq!(parse(&bytes).describe(), want, "{name}");
    }
}

#[test]
fn pe_imports_are_read() {
    let info = parse(&pe_image(
        0x8664,
        3,
        &["KERNEL32.dll", "NETAPI32.dll", "kernel32.DLL"],
    ));
    let Format::Pe(pe) = info.format else {
        panic!("not PE: {info:?}")
    };
    assert_eq!(pe.imports, ["KERNEL32.dll", "NETAPI32.dll"]);
    assert!(info.incomplete.is_empty(), "{:?}", info.incomplete);
}
