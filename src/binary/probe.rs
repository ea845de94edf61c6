//! The streaming probe: fed a file's bytes in order, it keeps only the byte ranges its parsers
//! ask for (each range asked for once the headers before it say where it is), at most
//! [`MAX_KEPT`] bytes per file, and answers a [`BinaryInfo`] that names what it could not keep.

use super::apis::ApiScan;
use super::info::{BinaryFormat, BinaryInfo, ElfInfo, GoBuildInfo, PeInfo};
use super::{elf, gobuild, pe, script};
use std::sync::Arc;

/// The most bytes a probe keeps for one file (headers, the PE section holding the import
/// directory, the Go buildinfo window, the ELF tail): 4 MiB. What would go past it is
/// reported in [`BinaryInfo::incomplete`], never guessed.
pub const MAX_KEPT: u64 = 4 << 20;
/// The first bytes kept of every file: the magic, the MS-DOS or ELF header, a `#!` line.
const HEAD: u64 = 4096;
/// Go's `readRawBuildInfo` reads the first 64 KiB of the data start.
const GO_WINDOW: u64 = 64 << 10;
/// For EM_ARM: the bytes kept before the section header table, where the linkers put the
/// small non-allocated sections such as `.ARM.attributes`.
const ELF_TAIL: u64 = 1 << 20;

/// What a kept byte range is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Purpose {
    Head,
    PeCoff { lfanew: u64 },
    PeHeaders(pe::Coff),
    PeImports,
    ElfProgs,
    ElfTail { start: u64 },
    GoData,
}

impl Purpose {
    fn what(self) -> &'static str {
        match self {
            Purpose::Head => "the file header",
            Purpose::PeCoff { .. } => "the PE signature and COFF header",
            Purpose::PeHeaders(_) => "the PE optional header and section table",
            Purpose::PeImports => "the PE section holding the import directory",
            Purpose::ElfProgs => "the ELF program headers",
            Purpose::ElfTail { .. } => "the ELF section headers",
            Purpose::GoData => "the Go buildinfo window",
        }
    }
}

/// One byte range asked for, filled as the stream passes it.
#[derive(Debug)]
struct Window {
    purpose: Purpose,
    start: u64,
    end: u64,
    data: Vec<u8>,
    /// The filled bytes once handed to the parser (shared, so that a later range can copy
    /// from them while the parser runs).
    filled: Option<Arc<[u8]>>,
}

/// Reads a file's executable headers from its bytes in order; see the module docs.
#[derive(Debug)]
pub struct Probe {
    size: u64,
    pos: u64,
    kept: u64,
    windows: Vec<Window>,
    format: BinaryFormat,
    go: Option<GoBuildInfo>,
    incomplete: Vec<String>,
    pe: Option<pe::Headers>,
    elf: Option<elf::Header>,
    /// The search for CSI Proxy API packages, over the whole of a PE or ELF file (the symbol
    /// table comes before the Go buildinfo, so every executable is searched); `None` for
    /// anything else.
    apis: Option<ApiScan>,
}

impl Probe {
    /// A probe for a file of `file_size` bytes (the tar header's size).
    pub fn new(file_size: u64) -> Probe {
        let mut probe = Probe {
            size: file_size,
            pos: 0,
            kept: 0,
            windows: Vec::new(),
            format: BinaryFormat::Other {
                reason: "empty file".to_string(),
            },
            go: None,
            incomplete: Vec::new(),
            pe: None,
            elf: None,
            apis: (file_size > 0).then(ApiScan::new),
        };
        if file_size > 0 {
            probe.want(Purpose::Head, 0, HEAD);
        }
        probe
    }

    /// The file's next bytes (any chunk size, in order). Bytes past `file_size` are ignored.
    pub fn feed(&mut self, mut chunk: &[u8]) {
        let room = self.size.saturating_sub(self.pos);
        chunk = &chunk[..chunk.len().min(usize::try_from(room).unwrap_or(usize::MAX))];
        if let Some(scan) = &mut self.apis {
            scan.feed(chunk);
        }
        while !chunk.is_empty() {
            if !self.wants_more() {
                self.pos += chunk.len() as u64;
                return;
            }
            // Stop at the end of the nearest open window: parsing it may ask for a range that
            // starts later in this chunk.
            let step = self
                .open()
                .map(|w| w.end - self.pos)
                .filter(|&n| n > 0)
                .min()
                .map_or(chunk.len(), |n| {
                    chunk.len().min(usize::try_from(n).unwrap_or(usize::MAX))
                });
            let (now, rest) = chunk.split_at(step);
            self.absorb(now);
            chunk = rest;
            self.advance(false);
        }
    }

    /// False once every range the parsers asked for has passed and, for a PE or ELF file, the
    /// whole file has (the CSI Proxy package search): the caller may stop feeding.
    pub fn wants_more(&self) -> bool {
        self.headers_open() || (self.apis.is_some() && self.pos < self.size)
    }

    /// Some range the header parsers asked for has not passed yet.
    fn headers_open(&self) -> bool {
        self.open().next().is_some()
    }

    /// The bytes this probe holds (at most [`MAX_KEPT`]).
    pub fn kept(&self) -> u64 {
        self.kept
    }

    /// What the probe found out. Never panics; a file that ended before a range it needed is
    /// reported in `incomplete`.
    pub fn finish(mut self) -> BinaryInfo {
        if self.headers_open() {
            self.incomplete.push(format!(
                "the file ended at byte {} of {} before everything needed was read",
                self.pos, self.size
            ));
        }
        self.advance(true);
        if let Some(scan) = self.apis.take() {
            let (apis, overflow) = scan.finish();
            if let Some(go) = &mut self.go {
                go.csi_proxy_apis = apis;
                if overflow {
                    self.incomplete.push(format!(
                        "more than {} CSI Proxy API packages named, the rest not read",
                        super::apis::MAX_APIS
                    ));
                }
            }
        }
        BinaryInfo {
            format: self.format,
            go: self.go,
            incomplete: self.incomplete,
        }
    }

    fn open(&self) -> impl Iterator<Item = &Window> {
        let pos = self.pos;
        self.windows
            .iter()
            .filter(move |w| w.filled.is_none() && w.end > pos)
    }

    fn absorb(&mut self, bytes: &[u8]) {
        let from = self.pos;
        let to = from + bytes.len() as u64;
        for w in self.windows.iter_mut().filter(|w| w.filled.is_none()) {
            let (s, e) = (w.start.max(from), w.end.min(to));
            if s < e {
                w.data
                    .extend_from_slice(&bytes[(s - from) as usize..(e - from) as usize]);
            }
        }
        self.pos = to;
    }

    /// Hands each filled window (every window, at the end of the stream) to its parser.
    fn advance(&mut self, at_end: bool) {
        while let Some(i) = self
            .windows
            .iter()
            .position(|w| w.filled.is_none() && (at_end || w.end <= self.pos))
        {
            let w = &mut self.windows[i];
            let data: Arc<[u8]> = Arc::from(std::mem::take(&mut w.data));
            w.filled = Some(Arc::clone(&data));
            let (purpose, start) = (w.purpose, w.start);
            self.handle(purpose, start, &data);
        }
    }

    /// Asks for `len` bytes at `start`, clipped to the file and to [`MAX_KEPT`]. A range that
    /// already streamed past is copied from the kept windows when they hold it, and reported
    /// as incomplete otherwise. Answers whether anything will be kept.
    fn want(&mut self, purpose: Purpose, start: u64, len: u64) -> bool {
        let what = purpose.what();
        if len == 0 {
            return false;
        }
        if start >= self.size {
            self.incomplete.push(format!(
                "{what} at offset {start} lies past the end of the file ({} bytes)",
                self.size
            ));
            return false;
        }
        let mut end = start.saturating_add(len).min(self.size);
        let room = MAX_KEPT - self.kept;
        if end - start > room {
            self.incomplete.push(format!(
                "{what}: {} of {} bytes kept (the per-file cap is {MAX_KEPT} bytes)",
                room,
                end - start
            ));
            end = start + room;
        }
        if end <= start {
            return false;
        }
        let mut data = Vec::new();
        if start < self.pos {
            let past_end = end.min(self.pos);
            let Some(copy) = self.kept_bytes(start, past_end) else {
                self.incomplete.push(format!(
                    "{what} at offset {start} came before the header that points to it"
                ));
                return false;
            };
            data = copy;
        }
        self.kept += end - start;
        self.windows.push(Window {
            purpose,
            start,
            end,
            data,
            filled: None,
        });
        true
    }

    fn kept_bytes(&self, start: u64, end: u64) -> Option<Vec<u8>> {
        self.windows.iter().find_map(|w| {
            let bytes = w.filled.as_deref().unwrap_or(&w.data);
            let have = w.start + bytes.len() as u64;
            (w.start <= start && end <= have)
                .then(|| bytes[(start - w.start) as usize..(end - w.start) as usize].to_vec())
        })
    }

    fn handle(&mut self, purpose: Purpose, start: u64, data: &[u8]) {
        match purpose {
            Purpose::Head => self.head(data),
            Purpose::PeCoff { lfanew } => self.pe_coff(lfanew, data),
            Purpose::PeHeaders(coff) => self.pe_headers(coff, data),
            Purpose::PeImports => self.pe_imports(start, data),
            Purpose::ElfProgs => self.elf_progs(data),
            Purpose::ElfTail { start: shoff } => self.elf_tail(start, shoff, data),
            Purpose::GoData => self.go = gobuild::find(data, &mut self.incomplete),
        }
    }

    fn other(&mut self, reason: String) {
        self.format = BinaryFormat::Other { reason };
    }

    fn head(&mut self, head: &[u8]) {
        if !head.starts_with(b"\x7fELF") && !head.starts_with(b"MZ") {
            self.apis = None;
        }
        if head.starts_with(b"#!") {
            self.format = script::parse(head);
        } else if head.starts_with(b"\x7fELF") {
            self.elf_header(head);
        } else if head.starts_with(b"MZ") {
            match pe::lfanew(head) {
                Ok(lfanew) => {
                    self.other("MZ header without a PE signature at e_lfanew".to_string());
                    self.want(Purpose::PeCoff { lfanew }, lfanew, pe::COFF_LEN);
                }
                Err(why) => self.other(why),
            }
        } else if !head.is_empty() {
            let magic: Vec<String> = head.iter().take(4).map(|b| format!("{b:02x}")).collect();
            self.other(format!(
                "not PE, ELF or a #! script (starts with {})",
                magic.join(" ")
            ));
        }
    }

    fn pe_coff(&mut self, lfanew: u64, data: &[u8]) {
        match pe::coff(data) {
            Ok(coff) => {
                self.format = BinaryFormat::Pe(PeInfo {
                    machine: coff.machine,
                    magic: None,
                    subsystem: None,
                    imports: Vec::new(),
                });
                let len = u64::from(coff.optional_len) + pe::SECTION_LEN * u64::from(coff.sections);
                self.want(Purpose::PeHeaders(coff), lfanew + pe::COFF_LEN, len);
            }
            Err(why) => self.other(why),
        }
    }

    fn pe_headers(&mut self, coff: pe::Coff, data: &[u8]) {
        let headers = pe::headers(data, &coff, &mut self.incomplete);
        if let BinaryFormat::Pe(info) = &mut self.format {
            info.magic = headers.magic;
            info.subsystem = headers.subsystem;
        }
        if let Some(s) = pe::go_data_section(&headers.sections) {
            let len = u64::from(s.raw_size).min(GO_WINDOW);
            self.want(Purpose::GoData, u64::from(s.raw_offset), len);
        }
        if let Some((rva, _)) = headers.import {
            match pe::section_of(&headers.sections, rva) {
                Some(s) => {
                    let (at, len) = (u64::from(s.raw_offset), u64::from(s.raw_size));
                    self.want(Purpose::PeImports, at, len);
                }
                None => self.incomplete.push(format!(
                    "the import directory at RVA 0x{rva:x} lies in no section's file data"
                )),
            }
        }
        self.pe = Some(headers);
    }

    fn pe_imports(&mut self, start: u64, data: &[u8]) {
        let Some(headers) = &self.pe else { return };
        let Some((rva, _)) = headers.import else {
            return;
        };
        let Some(sect) = pe::section_of(&headers.sections, rva) else {
            return;
        };
        if u64::from(sect.raw_offset) != start {
            return;
        }
        let names = pe::imports(data, sect, rva, &mut self.incomplete);
        if let BinaryFormat::Pe(info) = &mut self.format {
            info.imports = names;
        }
    }

    fn elf_header(&mut self, head: &[u8]) {
        let h = match elf::header(head) {
            Ok(h) => h,
            Err(why) => return self.other(why),
        };
        self.format = BinaryFormat::Elf(ElfInfo {
            class: h.class,
            endian: h.endian,
            machine: h.machine,
            arm_arch: None,
        });
        self.elf = Some(h);
        if h.phnum > 0 {
            self.want(Purpose::ElfProgs, h.phoff, h.phdrs_len());
        }
        if h.machine == elf::EM_ARM {
            // No section headers (a stripped ELF may have none): no attributes to read.
            if h.shoff != 0 && h.shnum != 0 {
                let from = h.shoff.saturating_sub(ELF_TAIL);
                let len = h.shoff - from + h.shdrs_len();
                self.want(Purpose::ElfTail { start: h.shoff }, from, len);
            }
        }
    }

    fn elf_progs(&mut self, data: &[u8]) {
        let Some(h) = self.elf else { return };
        if let Some((offset, size)) = elf::go_data_segment(data, &h) {
            self.want(Purpose::GoData, offset, size.min(GO_WINDOW));
        }
    }

    fn elf_tail(&mut self, start: u64, shoff: u64, data: &[u8]) {
        let Some(h) = self.elf else { return };
        let shdrs = data.get(usize::try_from(shoff - start).unwrap_or(usize::MAX)..);
        let Some((off, size)) = shdrs.and_then(|s| elf::arm_attributes_section(s, &h)) else {
            return;
        };
        let attrs = off
            .checked_sub(start)
            .and_then(|rel| super::read::slice(data, rel, size));
        let Some(attrs) = attrs else {
            self.incomplete.push(format!(
                "the ARM attributes at offset {off} lie outside the {ELF_TAIL} bytes kept before the section headers"
            ));
            return;
        };
        match elf::cpu_arch(attrs, h.endian) {
            Ok(arch) => {
                if let BinaryFormat::Elf(info) = &mut self.format {
                    info.arm_arch = arch.map(super::info::ArmArch);
                }
            }
            Err(why) => self.incomplete.push(why),
        }
    }
}
