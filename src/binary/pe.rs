//! PE/COFF header parsing (Microsoft's "PE Format" specification): the MS-DOS stub's
//! `e_lfanew`, the `PE\0\0` signature and COFF file header, the optional header (magic,
//! subsystem, data directories) and section table, and the import directory table.

use super::info::Endian::Little;
use super::read::{cstr, slice, u16_at, u32_at};

/// Size of the signature plus the COFF file header ("PE Format", "Signature (Image Only)" and
/// "COFF File Header (Object and Image)": 4 + 20 bytes).
pub(super) const COFF_LEN: u64 = 24;
/// One section table entry ("Section Table (Section Headers)").
pub(super) const SECTION_LEN: u64 = 40;
/// One import directory entry ("Import Directory Table").
const IMPORT_ENTRY_LEN: u64 = 20;
/// The longest DLL name read (Windows' MAX_PATH).
const NAME_MAX: usize = 260;

/// The COFF file header fields the probe needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Coff {
    pub machine: u16,
    pub sections: u16,
    pub optional_len: u16,
}

/// One section table entry.
#[derive(Debug, Clone)]
pub(super) struct Section {
    pub virtual_address: u32,
    pub raw_size: u32,
    pub raw_offset: u32,
    pub characteristics: u32,
}

/// The optional header fields and the section table.
#[derive(Debug, Clone)]
pub(super) struct Headers {
    pub magic: Option<u16>,
    pub subsystem: Option<u16>,
    /// The import directory (data directory 1): RVA and size, when present and non-empty.
    pub import: Option<(u32, u32)>,
    pub sections: Vec<Section>,
}

/// `e_lfanew` from the MS-DOS header (offset 0x3c, "MS-DOS Stub (Image Only)").
pub(super) fn lfanew(head: &[u8]) -> Result<u64, String> {
    match u32_at(head, 0x3c, Little) {
        Some(v) => Ok(u64::from(v)),
        None => Err(format!(
            "MZ header truncated ({} bytes, e_lfanew is at 0x3c)",
            head.len()
        )),
    }
}

/// The PE signature and COFF file header at `e_lfanew`.
pub(super) fn coff(b: &[u8]) -> Result<Coff, String> {
    if b.get(..4) != Some(b"PE\0\0".as_slice()) {
        return Err("MZ header without a PE signature at e_lfanew".to_string());
    }
    match (
        u16_at(b, 4, Little),
        u16_at(b, 6, Little),
        u16_at(b, 20, Little),
    ) {
        (Some(machine), Some(sections), Some(optional_len)) => Ok(Coff {
            machine,
            sections,
            optional_len,
        }),
        _ => Err(format!(
            "COFF file header truncated ({} of 24 bytes)",
            b.len()
        )),
    }
}

/// The optional header and section table, which follow the COFF header (`b` starts at the
/// optional header). Fields the bytes do not hold are reported in `problems`.
pub(super) fn headers(b: &[u8], coff: &Coff, problems: &mut Vec<String>) -> Headers {
    let opt_len = u64::from(coff.optional_len);
    let opt = slice(b, 0, opt_len).unwrap_or(b);
    let magic = u16_at(opt, 0, Little);
    // "Optional Header Windows-Specific Fields": Subsystem at 68 in PE32 and PE32+ alike;
    // NumberOfRvaAndSizes at 92 (PE32) or 108 (PE32+), the data directories right after.
    let dirs_at = match magic {
        Some(0x10b) => Some(92),
        Some(0x20b) => Some(108),
        Some(m) => {
            problems.push(format!("unknown optional header magic 0x{m:x}"));
            None
        }
        None => {
            problems.push("no optional header".to_string());
            None
        }
    };
    let subsystem = dirs_at.and_then(|_| u16_at(opt, 68, Little));
    let import = dirs_at.and_then(|at| import_directory(opt, at));
    let mut sections = Vec::new();
    for i in 0..u64::from(coff.sections) {
        match section(b, opt_len + i * SECTION_LEN) {
            Some(s) => sections.push(s),
            None => {
                problems.push(format!(
                    "section table truncated ({i} of {} entries read)",
                    coff.sections
                ));
                break;
            }
        }
    }
    Headers {
        magic: magic.filter(|m| dirs_at.is_some() || *m == 0x10b || *m == 0x20b),
        subsystem,
        import,
        sections,
    }
}

/// Data directory 1 ("Optional Header Data Directories": Import Table), when the header
/// has at least two directories and the entry is non-zero.
fn import_directory(opt: &[u8], count_at: u64) -> Option<(u32, u32)> {
    let count = u32_at(opt, count_at, Little)?;
    if count < 2 {
        return None;
    }
    let rva = u32_at(opt, count_at + 4 + 8, Little)?;
    let size = u32_at(opt, count_at + 4 + 12, Little)?;
    (rva != 0).then_some((rva, size))
}

fn section(b: &[u8], at: u64) -> Option<Section> {
    let s = slice(b, at, SECTION_LEN)?;
    Some(Section {
        virtual_address: u32_at(s, 12, Little)?,
        raw_size: u32_at(s, 16, Little)?,
        raw_offset: u32_at(s, 20, Little)?,
        characteristics: u32_at(s, 36, Little)?,
    })
}

impl Section {
    /// Whether `rva` lies in this section's raw (file-backed) data.
    pub fn holds(&self, rva: u32) -> bool {
        rva.checked_sub(self.virtual_address)
            .is_some_and(|off| off < self.raw_size)
    }
}

/// The section whose file data holds `rva`.
pub(super) fn section_of(sections: &[Section], rva: u32) -> Option<&Section> {
    sections.iter().find(|s| s.holds(rva))
}

/// Where Go's `debug/buildinfo` looks for the buildinfo blob in a PE file (`peExe.DataStart`):
/// the first section with a virtual address and a size whose characteristics, alignment bits
/// aside, are exactly initialized data + read + write.
pub(super) fn go_data_section(sections: &[Section]) -> Option<&Section> {
    const INITIALIZED_DATA: u32 = 0x40;
    const MEM_READ: u32 = 0x4000_0000;
    const MEM_WRITE: u32 = 0x8000_0000;
    const ALIGN_32BYTES: u32 = 0x60_0000;
    sections.iter().find(|s| {
        s.virtual_address != 0
            && s.raw_size != 0
            && s.characteristics & !ALIGN_32BYTES == INITIALIZED_DATA | MEM_READ | MEM_WRITE
    })
}

/// The DLL names of the import directory table at `import_rva`, read from `data`, the kept
/// file bytes of `sect` (possibly fewer than its raw size). Each descriptor is 20 bytes; the
/// table ends at an all-zero descriptor. Reading is sequential, so a hostile table cannot
/// loop; it ends at the kept bytes at the latest. Names are read only from `sect`; each
/// name is kept once (the first spelling, compared case-insensitively).
pub(super) fn imports(
    data: &[u8],
    sect: &Section,
    import_rva: u32,
    problems: &mut Vec<String>,
) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    let base = u64::from(import_rva.saturating_sub(sect.virtual_address));
    for i in 0.. {
        let Some(entry) = slice(data, base + i * IMPORT_ENTRY_LEN, IMPORT_ENTRY_LEN) else {
            problems.push(format!(
                "import directory table runs past the kept bytes after {i} entries"
            ));
            break;
        };
        if entry.iter().all(|&b| b == 0) {
            break;
        }
        let name_rva = u32_at(entry, 12, Little).unwrap_or(0);
        match import_name(data, sect, name_rva) {
            Ok(name) => names.push(name),
            Err(why) => problems.push(format!("import {i}: {why}")),
        }
    }
    super::dll::first_of_each(names, |n| n.to_ascii_lowercase())
}

fn import_name(data: &[u8], sect: &Section, rva: u32) -> Result<String, String> {
    if !sect.holds(rva) {
        return Err(format!(
            "DLL name at RVA 0x{rva:x} lies outside the import section"
        ));
    }
    let off = usize::try_from(rva - sect.virtual_address).unwrap_or(usize::MAX);
    let rest = data.get(off..).unwrap_or_default();
    match cstr(rest, NAME_MAX) {
        Some([]) => Err(format!("empty DLL name at RVA 0x{rva:x}")),
        Some(name) => Ok(String::from_utf8_lossy(name).into_owned()),
        None => Err(format!(
            "DLL name at RVA 0x{rva:x} is unterminated or longer than {NAME_MAX} bytes"
        )),
    }
}
