//! ELF header parsing (System V gABI, "ELF Header", "Program Header", "Section Header") and
//! the ARM EABI build attributes (ARM IHI 0044 "ELF for the Arm Architecture", section
//! "Build Attributes"; ARM IHI 0045 "Addenda", `Tag_CPU_arch`).

use super::info::{ElfClass, Endian};
use super::read::{cstr, slice, u16_at, u32_at, u64_at, uleb128};

/// e_machine of 32-bit ARM.
pub(super) const EM_ARM: u16 = 40;
/// SHT_ARM_ATTRIBUTES (ARM IHI 0044, "Section Types").
const SHT_ARM_ATTRIBUTES: u32 = 0x7000_0003;
/// PT_LOAD and the PF_X / PF_W flags (gABI, "Program Header").
const PT_LOAD: u32 = 1;
const PF_X: u32 = 1;
const PF_W: u32 = 2;

/// The ELF header fields the probe needs.
#[derive(Debug, Clone, Copy)]
pub(super) struct Header {
    pub class: ElfClass,
    pub endian: Endian,
    pub machine: u16,
    pub phoff: u64,
    pub phentsize: u16,
    pub phnum: u16,
    pub shoff: u64,
    pub shentsize: u16,
    pub shnum: u16,
}

/// The ELF header at the start of the file (`e_ident` class and data, then the fields at
/// their ELF32 or ELF64 offsets).
pub(super) fn header(b: &[u8]) -> Result<Header, String> {
    let class = match b.get(4) {
        Some(1) => ElfClass::Elf32,
        Some(2) => ElfClass::Elf64,
        Some(c) => return Err(format!("ELF with unknown class {c}")),
        None => return Err("ELF identification truncated".to_string()),
    };
    let endian = match b.get(5) {
        Some(1) => Endian::Little,
        Some(2) => Endian::Big,
        Some(d) => return Err(format!("ELF with unknown data encoding {d}")),
        None => return Err("ELF identification truncated".to_string()),
    };
    let e = endian;
    let word = |at: u64| match class {
        ElfClass::Elf32 => u32_at(b, at, e).map(u64::from),
        ElfClass::Elf64 => u64_at(b, at, e),
    };
    // ELF32: e_phoff 28, e_shoff 32, e_phentsize 42; ELF64: 32, 40, 54.
    let (phoff_at, shoff_at, tail_at) = match class {
        ElfClass::Elf32 => (28, 32, 42),
        ElfClass::Elf64 => (32, 40, 54),
    };
    let fields = (
        u16_at(b, 18, e),
        word(phoff_at),
        word(shoff_at),
        u16_at(b, tail_at, e),
        u16_at(b, tail_at + 2, e),
        u16_at(b, tail_at + 4, e),
        u16_at(b, tail_at + 6, e),
    );
    let (
        Some(machine),
        Some(phoff),
        Some(shoff),
        Some(phentsize),
        Some(phnum),
        Some(shentsize),
        Some(shnum),
    ) = fields
    else {
        return Err(format!("ELF header truncated ({} bytes)", b.len()));
    };
    Ok(Header {
        class,
        endian,
        machine,
        phoff,
        phentsize,
        phnum,
        shoff,
        shentsize,
        shnum,
    })
}

impl Header {
    /// Length of the program header table.
    pub fn phdrs_len(&self) -> u64 {
        u64::from(self.phentsize) * u64::from(self.phnum)
    }

    /// Length of the section header table.
    pub fn shdrs_len(&self) -> u64 {
        u64::from(self.shentsize) * u64::from(self.shnum)
    }

    fn word(&self, b: &[u8], at32: u64, at64: u64) -> Option<u64> {
        match self.class {
            ElfClass::Elf32 => u32_at(b, at32, self.endian).map(u64::from),
            ElfClass::Elf64 => u64_at(b, at64, self.endian),
        }
    }
}

/// Where Go's `debug/buildinfo` looks for the buildinfo blob when there is no
/// `.go.buildinfo` section name to go by (`elfExe.DataStart`): the first PT_LOAD segment that
/// is writable and not executable. Answers its file offset and size.
pub(super) fn go_data_segment(phdrs: &[u8], h: &Header) -> Option<(u64, u64)> {
    let e = h.endian;
    for i in 0..u64::from(h.phnum) {
        let p = slice(phdrs, i * u64::from(h.phentsize), u64::from(h.phentsize))?;
        // ELF32: p_offset 4, p_filesz 16, p_flags 24; ELF64: p_flags 4, p_offset 8, p_filesz 32.
        let flags = match h.class {
            ElfClass::Elf32 => u32_at(p, 24, e)?,
            ElfClass::Elf64 => u32_at(p, 4, e)?,
        };
        if u32_at(p, 0, e)? == PT_LOAD && flags & (PF_X | PF_W) == PF_W {
            return Some((h.word(p, 4, 8)?, h.word(p, 16, 32)?));
        }
    }
    None
}

/// The file offset and size of the SHT_ARM_ATTRIBUTES section.
pub(super) fn arm_attributes_section(shdrs: &[u8], h: &Header) -> Option<(u64, u64)> {
    for i in 0..u64::from(h.shnum) {
        let s = slice(shdrs, i * u64::from(h.shentsize), u64::from(h.shentsize))?;
        // sh_type at 4; ELF32: sh_offset 16, sh_size 20; ELF64: 24, 32.
        if u32_at(s, 4, h.endian)? == SHT_ARM_ATTRIBUTES {
            return Some((h.word(s, 16, 24)?, h.word(s, 20, 32)?));
        }
    }
    None
}

/// `Tag_CPU_arch` (tag 6) of the "aeabi" subsection's file-scope attributes: format version
/// 'A', then subsections (length, vendor name, then tagged sub-subsections), each attribute a
/// ULEB128 tag and a ULEB128 or NUL-terminated value (tags 4, 5, 67 and odd tags over 32 are
/// strings; tag 32 is a number and a string). `Ok(None)` when the attributes do not say.
pub(super) fn cpu_arch(b: &[u8], e: Endian) -> Result<Option<u64>, String> {
    if b.first() != Some(&b'A') {
        return Err("ARM attributes with an unknown format version".to_string());
    }
    let mut at: u64 = 1;
    while let Some(len) = u32_at(b, at, e) {
        let len = u64::from(len);
        let Some(sub) = slice(b, at, len).filter(|_| len > 4) else {
            return Err(format!(
                "ARM attributes subsection at {at} overruns the section"
            ));
        };
        let vendor = cstr(&sub[4..], 64).unwrap_or_default();
        if vendor == b"aeabi" {
            return file_attributes(&sub[4 + vendor.len() + 1..], e);
        }
        at += len;
    }
    Ok(None)
}

fn file_attributes(mut b: &[u8], e: Endian) -> Result<Option<u64>, String> {
    while let (Some(&tag), Some(size)) = (b.first(), u32_at(b, 1, e)) {
        let Some(body) = slice(b, 0, u64::from(size)).filter(|_| size > 5) else {
            return Err("ARM attributes sub-subsection overruns its subsection".to_string());
        };
        if tag == 1 {
            return scan_tags(&body[5..]);
        }
        b = &b[body.len()..];
    }
    Ok(None)
}

fn scan_tags(mut b: &[u8]) -> Result<Option<u64>, String> {
    while !b.is_empty() {
        let Some((tag, n)) = uleb128(b) else {
            return Err("ARM attributes: unreadable tag".to_string());
        };
        b = &b[n..];
        let string = matches!(tag, 4 | 5 | 67) || (tag > 32 && tag % 2 == 1);
        if tag == 32 || !string {
            let Some((value, n)) = uleb128(b) else {
                return Err(format!("ARM attributes: unreadable value of tag {tag}"));
            };
            if tag == 6 {
                return Ok(Some(value));
            }
            b = &b[n..];
        }
        if string || tag == 32 {
            let Some(text) = cstr(b, b.len()) else {
                return Err(format!("ARM attributes: unterminated string of tag {tag}"));
            };
            b = &b[text.len() + 1..];
        }
    }
    Ok(None)
}
