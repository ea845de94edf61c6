//! The Windows layer writer: turns a layer Buildah before 1.44 added to a Windows image (plain
//! Linux layout) into the Windows layer format Buildah 1.44 writes (docs/images.md, "Windows
//! layer format"): `Hives/` and `Files/` directory entries first, every entry under `Files/`,
//! PAX format, and on every entry the PAX records `MSWINDOWS.fileattr`, `MSWINDOWS.rawsd` and
//! `LIBARCHIVE.creationtime`.
//!
//! Streaming: the input tar is read entry by entry and the output written as it goes (gzip at
//! a fixed level, gzip header without a time), so memory does not grow with the layer and the
//! same input and times give the same bytes. Pure but for the reader and writer it is given.

use std::io::{self, Read, Write};
use std::path::{Component, Path};

use base64::Engine as _;

use crate::digest::{Algorithm, Digest, Hasher};

/// `FILE_ATTRIBUTE_DIRECTORY`, the `MSWINDOWS.fileattr` of a directory.
pub const ATTR_DIRECTORY: u32 = 0x10;
/// `FILE_ATTRIBUTE_ARCHIVE`, the `MSWINDOWS.fileattr` of every other entry.
pub const ATTR_ARCHIVE: u32 = 0x20;

/// PAX key of the Windows file attributes (decimal).
pub const PAX_FILEATTR: &str = "MSWINDOWS.fileattr";
/// PAX key of the self-relative security descriptor (base64).
pub const PAX_RAWSD: &str = "MSWINDOWS.rawsd";
/// PAX key of the creation time (seconds since the epoch).
pub const PAX_CREATIONTIME: &str = "LIBARCHIVE.creationtime";

/// `FILE_ALL_ACCESS`.
const FULL_ACCESS: u32 = 0x001f_01ff;
/// Read and execute (`0x1200a9`).
const READ_EXECUTE: u32 = 0x0012_00a9;
/// `OBJECT_INHERIT_ACE | CONTAINER_INHERIT_ACE` (`OICI`).
const INHERIT: u8 = 0x03;
/// S-1-5-32-544, BUILTIN\Administrators (`BA`).
const SID_ADMINISTRATORS: [u8; 16] = [1, 2, 0, 0, 0, 0, 0, 5, 32, 0, 0, 0, 0x20, 2, 0, 0];
/// S-1-5-32-545, BUILTIN\Users (`BU`).
const SID_USERS: [u8; 16] = [1, 2, 0, 0, 0, 0, 0, 5, 32, 0, 0, 0, 0x21, 2, 0, 0];
/// S-1-5-18, LocalSystem (`SY`).
const SID_SYSTEM: [u8; 12] = [1, 1, 0, 0, 0, 0, 0, 5, 18, 0, 0, 0];

/// The self-relative security descriptor Buildah 1.44 gives an entry: owner and group
/// Administrators, a DACL granting Administrators and SYSTEM full control and Users read and
/// execute; inherited by children (`OICI`) on directories. As SDDL:
/// `O:BAG:SYD:(A;OICI;FA;;;BA)(A;OICI;FA;;;SY)(A;OICI;0x1200a9;;;BU)` for a directory,
/// `O:BAG:SYD:(A;;FA;;;BA)(A;;FA;;;SY)(A;;0x1200a9;;;BU)` for a file.
pub fn security_descriptor(directory: bool) -> Vec<u8> {
    let flags = if directory { INHERIT } else { 0 };
    let aces: [(u32, &[u8]); 3] = [
        (FULL_ACCESS, &SID_ADMINISTRATORS),
        (FULL_ACCESS, &SID_SYSTEM),
        (READ_EXECUTE, &SID_USERS),
    ];
    let mut acl = Vec::new();
    for (mask, sid) in aces {
        acl.push(0); // ACCESS_ALLOWED_ACE_TYPE
        acl.push(flags);
        acl.extend_from_slice(&(8 + sid.len() as u16).to_le_bytes());
        acl.extend_from_slice(&mask.to_le_bytes());
        acl.extend_from_slice(sid);
    }
    let owner = 20u32;
    let group = owner + SID_ADMINISTRATORS.len() as u32;
    let dacl = group + SID_ADMINISTRATORS.len() as u32;
    // Revision 1; control SE_SELF_RELATIVE | SE_DACL_PRESENT; no SACL.
    let mut sd = vec![1u8, 0];
    sd.extend_from_slice(&0x8004u16.to_le_bytes());
    for offset in [owner, group, 0, dacl] {
        sd.extend_from_slice(&offset.to_le_bytes());
    }
    sd.extend_from_slice(&SID_ADMINISTRATORS);
    sd.extend_from_slice(&SID_ADMINISTRATORS);
    sd.extend_from_slice(&[2, 0]); // ACL revision, padding
    sd.extend_from_slice(&(8 + acl.len() as u16).to_le_bytes());
    sd.extend_from_slice(&(aces.len() as u16).to_le_bytes());
    sd.extend_from_slice(&[0, 0]);
    sd.extend_from_slice(&acl);
    sd
}

/// The times of a rewritten layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LayerTimes {
    /// Time of the `Hives/` and `Files/` entries (the image's creation time).
    pub dirs: u64,
    /// `SOURCE_DATE_EPOCH` / `--timestamp`: no time in the layer is later.
    pub clamp: Option<u64>,
}

impl LayerTimes {
    fn clamped(&self, t: u64) -> u64 {
        self.clamp.map_or(t, |c| t.min(c))
    }
}

/// What the rewrite produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rewritten {
    /// sha256 of the uncompressed tar (the config's `diff_id`).
    pub diff_id: Digest,
    /// sha256 of the gzip blob.
    pub digest: Digest,
    /// Size of the gzip blob.
    pub size: u64,
    /// Entries written, `Hives/` and `Files/` included.
    pub entries: usize,
}

/// Why a layer cannot be rewritten.
#[derive(Debug, thiserror::Error)]
pub enum LayerError {
    /// The input is not a readable tar (or gzip), or the output cannot be written.
    #[error("cannot rewrite the layer")]
    Io(#[from] io::Error),
    /// An entry's name leaves the layer's root.
    #[error("entry '{0}' leaves the layer's root; not rewritten")]
    Escapes(String),
    /// An entry is already in the Windows layout.
    #[error("entry '{0}' is already under Files/ or Hives/: the layer is in the Windows format")]
    AlreadyWindows(String),
}

/// A writer that hashes and counts what passes through it.
struct Hashing<W> {
    inner: W,
    hasher: Hasher,
    count: u64,
}

impl<W: Write> Write for Hashing<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        self.count += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

impl<W> Hashing<W> {
    fn new(inner: W) -> Self {
        Hashing {
            inner,
            hasher: Hasher::new(Algorithm::Sha256),
            count: 0,
        }
    }
}

/// `name` without `./` and `/` in front, checked: `None` for the root itself.
fn relative(name: &Path) -> Result<Option<String>, LayerError> {
    let shown = name.display().to_string();
    let mut parts = Vec::new();
    for c in name.components() {
        match c {
            Component::Normal(p) => parts.push(p.to_string_lossy().into_owned()),
            Component::CurDir | Component::RootDir => {}
            Component::ParentDir | Component::Prefix(_) => {
                return Err(LayerError::Escapes(shown));
            }
        }
    }
    if parts.is_empty() {
        return Ok(None);
    }
    if matches!(parts[0].as_str(), "Files" | "Hives") {
        return Err(LayerError::AlreadyWindows(shown));
    }
    Ok(Some(parts.join("/")))
}

/// The PAX records of an entry: the Windows ones, then `path`/`linkpath` when the name does
/// not fit a ustar header.
fn records(directory: bool, time: u64, long: &[(&'static str, &str)]) -> Vec<(String, Vec<u8>)> {
    let attr = if directory {
        ATTR_DIRECTORY
    } else {
        ATTR_ARCHIVE
    };
    let sd = base64::engine::general_purpose::STANDARD.encode(security_descriptor(directory));
    let mut out = vec![
        (PAX_CREATIONTIME.to_string(), time.to_string().into_bytes()),
        (PAX_FILEATTR.to_string(), attr.to_string().into_bytes()),
        (PAX_RAWSD.to_string(), sd.into_bytes()),
    ];
    for (k, v) in long {
        out.push((k.to_string(), v.as_bytes().to_vec()));
    }
    out
}

/// One output entry: its ustar header (names set, or left for PAX) and its PAX records.
fn write_entry<W: Write>(
    out: &mut tar::Builder<W>,
    mut header: tar::Header,
    name: &str,
    link: Option<&str>,
    time: u64,
    data: &mut dyn Read,
) -> io::Result<()> {
    let directory = header.entry_type().is_dir();
    let mut long = Vec::new();
    if header.set_path(name).is_err() {
        long.push(("path", name));
        header.set_path(truncate(name))?;
    }
    if let Some(l) = link
        && header.set_link_name(l).is_err()
    {
        long.push(("linkpath", l));
        header.set_link_name(truncate(l))?;
    }
    header.set_mtime(time);
    header.set_cksum();
    let recs = records(directory, time, &long);
    out.append_pax_extensions(recs.iter().map(|(k, v)| (k.as_str(), v.as_slice())))?;
    out.append(&header, data)
}

/// A placeholder for a name kept in a PAX record: its first 99 bytes, on a char boundary.
fn truncate(name: &str) -> &str {
    let mut end = name.len().min(99);
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    &name[..end]
}

/// The `Hives/` and `Files/` directory entries every Windows layer starts with.
fn write_roots<W: Write>(out: &mut tar::Builder<W>, times: LayerTimes) -> io::Result<()> {
    let time = times.clamped(times.dirs);
    for name in ["Hives/", "Files/"] {
        let mut h = tar::Header::new_ustar();
        h.set_entry_type(tar::EntryType::Directory);
        h.set_mode(0o755);
        h.set_size(0);
        write_entry(out, h, name, None, time, &mut io::empty())?;
    }
    Ok(())
}

/// The one Windows layer writer: `Hives/` and `Files/` first, then the entries of each tar
/// appended, every one under `Files/` with the Windows PAX records, into a gzip'd tar. Both the
/// rewrite of a layer Buildah wrote ([`rewrite`]) and the Windows stage composed without
/// Buildah (`builder::compose`) write through it.
pub struct LayerWriter<W: Write> {
    out: tar::Builder<Hashing<flate2::write::GzEncoder<Hashing<W>>>>,
    times: LayerTimes,
    entries: usize,
}

impl<W: Write> LayerWriter<W> {
    /// Starts a layer on `output`: writes the `Hives/` and `Files/` entries.
    pub fn new(output: W, times: LayerTimes) -> Result<Self, LayerError> {
        let compressed = Hashing::new(output);
        let encoder = flate2::GzBuilder::new().write(compressed, flate2::Compression::new(6));
        let mut out = tar::Builder::new(Hashing::new(encoder));
        write_roots(&mut out, times)?;
        Ok(LayerWriter {
            out,
            times,
            entries: 2,
        })
    }

    /// Appends every entry of the tar `input` (gzip'd when `gzip`), in its order, under
    /// `Files/`.
    pub fn append_tar<R: Read>(&mut self, input: R, gzip: bool) -> Result<(), LayerError> {
        let reader: Box<dyn Read + '_> = if gzip {
            Box::new(flate2::read::MultiGzDecoder::new(input))
        } else {
            Box::new(input)
        };
        let mut archive = tar::Archive::new(reader);
        for entry in archive.entries()? {
            let mut entry = entry?;
            let Some(rel) = relative(&entry.path()?)? else {
                continue;
            };
            let kind = entry.header().entry_type();
            let name = if kind.is_dir() {
                format!("Files/{rel}/")
            } else {
                format!("Files/{rel}")
            };
            let link = match entry.link_name()? {
                Some(l) if kind.is_hard_link() => relative(&l)?.map(|r| format!("Files/{r}")),
                Some(l) => Some(l.to_string_lossy().into_owned()),
                None => None,
            };
            let mut header = tar::Header::new_ustar();
            header.set_entry_type(kind);
            header.set_mode(entry.header().mode()?);
            header.set_uid(entry.header().uid()?);
            header.set_gid(entry.header().gid()?);
            header.set_size(entry.size());
            let time = self.times.clamped(entry.header().mtime()?);
            write_entry(
                &mut self.out,
                header,
                &name,
                link.as_deref(),
                time,
                &mut entry,
            )?;
            self.entries += 1;
        }
        Ok(())
    }

    /// Ends the tar and the gzip stream; returns the layer's digests and size.
    pub fn finish(self) -> Result<Rewritten, LayerError> {
        let tar = self.out.into_inner()?;
        let diff_id = tar.hasher.finish();
        let compressed = tar.inner.finish()?;
        Ok(Rewritten {
            diff_id,
            digest: compressed.hasher.finish(),
            size: compressed.count,
            entries: self.entries,
        })
    }
}

/// Rewrites the tar `input` (gzip'd when `gzip`) into a gzip'd Windows-format layer on `output`.
pub fn rewrite<R: Read, W: Write>(
    input: R,
    gzip: bool,
    output: W,
    times: LayerTimes,
) -> Result<Rewritten, LayerError> {
    let mut writer = LayerWriter::new(output, times)?;
    writer.append_tar(input, gzip)?;
    writer.finish()
}

#[cfg(test)]
mod tests;
