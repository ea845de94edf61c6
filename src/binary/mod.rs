//! Executable headers, read while a file streams past: PE/COFF (machine, subsystem, imported
//! DLLs), ELF (class, byte order, machine, ARM architecture), `#!` scripts, and the Go build
//! information with its module dependencies, and the CSI Proxy API packages a Go program
//! embeds. Pure: no I/O; a [`Probe`] is fed the file's bytes in order and keeps only the
//! header ranges it needs, at most [`MAX_KEPT`] bytes per file. Hostile or truncated input
//! gives a bounded answer that names the problem, never a panic. See `docs/images.md`.

mod apis;
mod check;
pub mod dll;
mod elf;
mod gobuild;
mod info;
mod pe;
mod probe;
mod read;
mod script;
mod version;

pub use apis::{CLIENT_MODULE, MAX_APIS, PROXY_MODULE, is_version};
pub use gobuild::MAX_DEPS;
pub use info::{
    ArmArch, BinaryFormat, BinaryInfo, ElfClass, ElfInfo, Endian, GoBuildInfo, GoModule, PeInfo,
    elf_machine_name, pe_machine_name,
};
pub use probe::{MAX_KEPT, Probe};
pub use version::ModuleVersion;

/// Probes a whole file held in memory (tests, fuzzing; the `--deep` stream feeds a [`Probe`]).
pub fn parse(bytes: &[u8]) -> BinaryInfo {
    let mut probe = Probe::new(bytes.len() as u64);
    probe.feed(bytes);
    probe.finish()
}

#[cfg(test)]
mod props;
#[cfg(test)]
mod tests;
