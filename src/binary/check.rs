//! Whether a probed file can run as the program of an image entry of a given platform.

use super::info::{
    BinaryFormat, BinaryInfo, ElfClass, ElfInfo, Endian, GoBuildInfo, PeInfo, pe_machine_name,
};

/// The PE `Machine` a Windows entry of this OCI architecture needs.
fn pe_machine(architecture: &str) -> Option<u16> {
    Some(match architecture {
        "amd64" => 0x8664,
        "arm64" => 0xaa64,
        "386" => 0x14c,
        "arm" => 0x1c4,
        _ => return None,
    })
}

/// The ELF class, byte order and `e_machine` a Linux entry of this OCI architecture needs.
fn elf_machine(architecture: &str) -> Option<(ElfClass, Endian, u16)> {
    use ElfClass::{Elf32, Elf64};
    use Endian::{Big, Little};
    Some(match architecture {
        "amd64" => (Elf64, Little, 62),
        "arm64" => (Elf64, Little, 183),
        "arm" => (Elf32, Little, 40),
        "386" => (Elf32, Little, 3),
        "ppc64le" => (Elf64, Little, 21),
        "ppc64" => (Elf64, Big, 21),
        "s390x" => (Elf64, Big, 22),
        "riscv64" => (Elf64, Little, 243),
        "mips64le" => (Elf64, Little, 8),
        "loong64" => (Elf64, Little, 258),
        _ => return None,
    })
}

/// The number of an ARM variant ("v7" → 7; containerd's default for arm is v7).
fn variant_number(variant: Option<&str>) -> Option<u64> {
    let v = variant.unwrap_or("v7");
    v.strip_prefix('v').unwrap_or(v).parse().ok()
}

impl BinaryInfo {
    /// Why this file cannot run as the program of an `os`/`architecture`/`variant` entry, or
    /// `None` when it can or this check cannot tell. A Windows entry needs a PE image of the
    /// entry's `Machine`; a Linux entry an ELF file of its class, byte order and `e_machine`,
    /// for arm at most the entry's variant where the ARM attributes say; a Go program's GOOS,
    /// GOARCH (and GOARM) must match too. A Linux script answers `None` (the caller resolves
    /// its interpreter); on Windows, which reads no `#!` line, it is no executable. Operating
    /// systems and architectures this check does not know answer `None`.
    pub fn platform_mismatch(
        &self,
        os: &str,
        architecture: &str,
        variant: Option<&str>,
    ) -> Option<String> {
        let found = self.describe();
        let format = match (&self.format, os) {
            (BinaryFormat::Pe(pe), "windows") => pe_mismatch(pe, architecture),
            (BinaryFormat::Script { .. }, "windows") => {
                Some("not a Windows PE executable".to_string())
            }
            (BinaryFormat::Script { .. }, _) => return None,
            (BinaryFormat::Elf(elf), "linux") => elf_mismatch(elf, architecture, variant),
            (_, "windows") => Some("not a Windows PE executable".to_string()),
            (_, "linux") => Some("not a Linux ELF executable".to_string()),
            _ => None,
        };
        let why = format.or_else(|| {
            self.go
                .as_ref()
                .and_then(|go| go_mismatch(go, os, architecture, variant))
        })?;
        Some(format!("{found}: {why}"))
    }
}

fn pe_mismatch(pe: &PeInfo, architecture: &str) -> Option<String> {
    let want = pe_machine(architecture)?;
    (pe.machine != want).then(|| {
        format!(
            "PE machine is not {} ({architecture})",
            pe_machine_name(want).unwrap_or("?")
        )
    })
}

fn elf_mismatch(elf: &ElfInfo, architecture: &str, variant: Option<&str>) -> Option<String> {
    let (class, endian, machine) = elf_machine(architecture)?;
    if (elf.class, elf.endian, elf.machine) != (class, endian, machine) {
        let want = ElfInfo {
            class,
            endian,
            machine,
            arm_arch: None,
        };
        return Some(format!("{architecture} needs {}", want.describe()));
    }
    if architecture != "arm" {
        return None;
    }
    let needs = elf.arm_arch.and_then(|a| a.variant())?;
    let entry = variant_number(variant)?;
    (variant_number(Some(needs))? > entry)
        .then(|| format!("built for ARM {needs}, the entry is v{entry}"))
}

fn go_mismatch(
    go: &GoBuildInfo,
    os: &str,
    architecture: &str,
    variant: Option<&str>,
) -> Option<String> {
    let (goos, goarch) = (go.goos.as_deref()?, go.goarch.as_deref()?);
    if goos != os || goarch != architecture {
        return Some(format!("Go build for {goos}/{goarch}"));
    }
    if architecture != "arm" {
        return None;
    }
    let goarm = go.goarm.as_deref()?;
    let digits: String = goarm.chars().take_while(char::is_ascii_digit).collect();
    let entry = variant_number(variant)?;
    (digits.parse::<u64>().ok()? > entry)
        .then(|| format!("Go build with GOARM={goarm}, the entry is v{entry}"))
}
