//! What a probe found out about one file: the types the rest of
//! imgcheck reads, and their short human description.

/// The result of probing one file: its executable format, the Go build information when it
/// is a Go program, and what could not be read (never guessed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BinaryInfo {
    /// The file's executable format.
    pub format: BinaryFormat,
    /// The Go build information, when the file is a Go program whose buildinfo blob was read.
    pub go: Option<GoBuildInfo>,
    /// Each thing the probe could not read, in words (a truncated header, an import table past
    /// the per-file cap, an old-format Go buildinfo…). Empty when everything needed was read.
    pub incomplete: Vec<String>,
}

/// An executable format, as far as the file's first bytes and headers tell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BinaryFormat {
    /// A Windows PE/COFF image (`MZ` … `PE\0\0`).
    Pe(PeInfo),
    /// An ELF file (`\x7fELF`).
    Elf(ElfInfo),
    /// A script that the kernel runs through its `#!` interpreter.
    Script {
        /// The interpreter path, as written after `#!`.
        interpreter: String,
        /// The rest of the `#!` line (Linux passes it as one argument), when there is one.
        args: Option<String>,
    },
    /// Anything else: not an executable, or a header too broken to name a machine.
    Other {
        /// Why, in words (e.g. "empty file", "MZ header without a PE signature").
        reason: String,
    },
}

/// The PE facts imgcheck checks (PE Format: COFF file header, optional header, import directory).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeInfo {
    /// The COFF header's `Machine` (0x8664 AMD64, 0xaa64 ARM64, 0x14c I386, 0x1c4 ARMNT…).
    pub machine: u16,
    /// The optional header's magic: 0x10b PE32, 0x20b PE32+; `None` when it was not read.
    pub magic: Option<u16>,
    /// The optional header's `Subsystem` (2 GUI, 3 console…); `None` when it was not read.
    pub subsystem: Option<u16>,
    /// The DLL names of the import directory table, in table order, each once (compared
    /// case-insensitively), as written in the file.
    pub imports: Vec<String>,
}

/// ELF class (`e_ident[EI_CLASS]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ElfClass {
    /// ELFCLASS32.
    Elf32,
    /// ELFCLASS64.
    Elf64,
}

/// Byte order (`e_ident[EI_DATA]` for ELF).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endian {
    /// ELFDATA2LSB: little-endian.
    Little,
    /// ELFDATA2MSB: big-endian.
    Big,
}

/// The ELF facts imgcheck checks (gABI ELF header; the ARM build attributes for EM_ARM).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ElfInfo {
    /// 32- or 64-bit.
    pub class: ElfClass,
    /// Byte order.
    pub endian: Endian,
    /// `e_machine` (62 x86-64, 183 AArch64, 40 ARM, 21 PPC64, 22 S390, 243 RISC-V, 3 i386…).
    pub machine: u16,
    /// For EM_ARM: the `Tag_CPU_arch` of the `.ARM.attributes` section, when it was read.
    pub arm_arch: Option<ArmArch>,
}

/// An ARM EABI `Tag_CPU_arch` value (ARM IHI 0045, "Addenda to the ABI for the ARM
/// Architecture", section 3.3.5.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArmArch(pub u64);

/// The Go build information of a Go program (Go's `debug/buildinfo` blob and the
/// `runtime/debug` build settings it holds).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GoBuildInfo {
    /// The toolchain version, e.g. `go1.19.8`.
    pub go_version: String,
    /// The main package path (`path` line), empty when the binary was built without modules.
    pub path: String,
    /// The main module (`mod` line: path), when recorded.
    pub main_module: Option<String>,
    /// The main module's version (`mod` line), when recorded.
    pub main_version: Option<String>,
    /// The `GOOS` build setting.
    pub goos: Option<String>,
    /// The `GOARCH` build setting.
    pub goarch: Option<String>,
    /// The `GOARM` build setting (GOARCH=arm only).
    pub goarm: Option<String>,
    /// The `vcs.revision` build setting (the commit the binary was built from).
    pub revision: Option<String>,
    /// The `vcs.modified` build setting (the work tree had uncommitted changes).
    pub modified: Option<bool>,
    /// The module dependencies (`dep` lines, each with the `=>` line that replaces it), in
    /// the order Go wrote them, at most `MAX_DEPS` (gobuild.rs).
    pub deps: Vec<GoModule>,
    /// The CSI Proxy API group versions the program embeds (`disk/v1`, `smb/v1beta1`…): the
    /// packages `github.com/kubernetes-csi/csi-proxy/client/api/<group>/<version>` (and
    /// `client/groups/…`) its symbol table names, sorted, at most
    /// [`MAX_APIS`](super::apis::MAX_APIS). Read from the whole file, not the buildinfo blob.
    pub csi_proxy_apis: Vec<String>,
}

impl GoBuildInfo {
    /// The csi-proxy client the program is built with: the `dep` line of
    /// [`CLIENT_MODULE`](super::CLIENT_MODULE), or of [`PROXY_MODULE`](super::PROXY_MODULE)
    /// before v2. `None` for the proxy itself (its main module) and for a program without one.
    pub fn csi_proxy_client(&self) -> Option<&GoModule> {
        use super::apis::{CLIENT_MODULE, PROXY_MODULE};
        if self.main_module.as_deref() == Some(PROXY_MODULE) {
            return None;
        }
        self.deps.iter().find(|d| {
            d.path == CLIENT_MODULE
                || (d.path == PROXY_MODULE
                    && super::ModuleVersion::parse(d.built_version()).is_none_or(|v| v.major() < 2))
        })
    }
}

/// A module of a Go program's build information (`runtime/debug.Module`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GoModule {
    /// The module path.
    pub path: String,
    /// The version (the required one for a replaced module; `(devel)` for a directory).
    pub version: String,
    /// What the `=>` line after it replaced it with: another module version, or a directory
    /// (a path starting with `.` or `/`, version `(devel)`).
    pub replace: Option<Box<GoModule>>,
}

impl GoModule {
    /// The version whose code was built: the replacement's when it is another module version,
    /// else the required one (a directory replacement has no version of its own).
    pub fn built_version(&self) -> &str {
        match &self.replace {
            Some(r) if !r.is_directory() => &r.version,
            _ => &self.version,
        }
    }

    /// A replacement by a directory on the build machine (`=> ../stub`, `=> C:\src`): a
    /// path that starts like a file path, as `golang.org/x/mod/modfile`'s `IsDirectoryPath`
    /// tells them apart (a module path never holds `:` or `\`).
    pub fn is_directory(&self) -> bool {
        self.path.starts_with(['.', '/', '\\']) || self.path.contains(':')
    }

    /// `path version`, with ` => path [version]` when replaced.
    pub fn describe(&self) -> String {
        let mut text = format!("{} {}", self.path, self.version);
        if let Some(r) = &self.replace {
            text.push_str(&format!(" => {}", r.path));
            if !r.is_directory() {
                text.push_str(&format!(" {}", r.version));
            }
        }
        text
    }
}

impl ArmArch {
    /// The OCI `variant` this architecture version needs at least (`v5`, `v6`, `v7`, `v8`),
    /// `None` for values this table does not know (M-profile cores, future values).
    pub fn variant(self) -> Option<&'static str> {
        match self.0 {
            1..=5 => Some("v5"),
            6..=9 => Some("v6"),
            10 => Some("v7"),
            14 | 18..=20 | 22 => Some("v8"),
            _ => None,
        }
    }
}

/// The name of a PE `Machine` value (PE Format, "Machine Types").
pub fn pe_machine_name(machine: u16) -> Option<&'static str> {
    Some(match machine {
        0x8664 => "AMD64",
        0xaa64 => "ARM64",
        0x14c => "I386",
        0x1c0 => "ARM",
        0x1c4 => "ARMNT",
        0xa641 => "ARM64EC",
        0x200 => "IA64",
        _ => return None,
    })
}

/// The name of an ELF `e_machine` value (gABI, "ELF Header").
pub fn elf_machine_name(machine: u16) -> Option<&'static str> {
    Some(match machine {
        3 => "Intel 80386",
        8 => "MIPS",
        20 => "PowerPC",
        21 => "64-bit PowerPC",
        22 => "IBM S/390",
        40 => "ARM",
        62 => "x86-64",
        183 => "AArch64",
        243 => "RISC-V",
        258 => "LoongArch",
        _ => return None,
    })
}

fn subsystem_name(subsystem: u16) -> Option<&'static str> {
    Some(match subsystem {
        1 => "native",
        2 => "GUI",
        3 => "console",
        _ => return None,
    })
}

impl PeInfo {
    /// "PE32+ AMD64 console".
    pub fn describe(&self) -> String {
        let kind = match self.magic {
            Some(0x20b) => "PE32+",
            _ => "PE32",
        };
        let machine = match pe_machine_name(self.machine) {
            Some(name) => name.to_string(),
            None => format!("machine 0x{:x}", self.machine),
        };
        let mut text = format!("{kind} {machine}");
        if let Some(s) = self.subsystem {
            match subsystem_name(s) {
                Some(name) => text.push_str(&format!(" {name}")),
                None => text.push_str(&format!(" subsystem {s}")),
            }
        }
        text
    }
}

impl ElfInfo {
    /// "ELF 64-bit LSB x86-64", "ELF 32-bit LSB ARM v7".
    pub fn describe(&self) -> String {
        let bits = match self.class {
            ElfClass::Elf32 => "32-bit",
            ElfClass::Elf64 => "64-bit",
        };
        let order = match self.endian {
            Endian::Little => "LSB",
            Endian::Big => "MSB",
        };
        let machine = match elf_machine_name(self.machine) {
            Some(name) => name.to_string(),
            None => format!("machine {}", self.machine),
        };
        let mut text = format!("ELF {bits} {order} {machine}");
        if let Some(v) = self.arm_arch.and_then(ArmArch::variant) {
            text.push(' ');
            text.push_str(v);
        }
        text
    }
}

impl BinaryInfo {
    /// A short human description: "ELF 64-bit LSB x86-64", "PE32+ AMD64 console",
    /// "script #!/bin/sh", "not an executable: empty file"; a Go program adds
    /// "(Go go1.19.8 linux/amd64)".
    pub fn describe(&self) -> String {
        let mut text = match &self.format {
            BinaryFormat::Pe(pe) => pe.describe(),
            BinaryFormat::Elf(elf) => elf.describe(),
            BinaryFormat::Script { interpreter, .. } => format!("script #!{interpreter}"),
            BinaryFormat::Other { reason } => format!("not an executable: {reason}"),
        };
        if let Some(go) = &self.go {
            text.push_str(&format!(" (Go {}", go.go_version));
            if let (Some(os), Some(arch)) = (&go.goos, &go.goarch) {
                text.push_str(&format!(" {os}/{arch}"));
            }
            text.push(')');
        }
        text
    }
}

#[cfg(test)]
impl BinaryInfo {
    /// What the probe says of a PE32+ AMD64 console program importing `imports`: the
    /// hand-made program of the tests that judge found programs.
    pub(crate) fn pe_amd64_console(imports: &[&str]) -> BinaryInfo {
        BinaryInfo {
            format: BinaryFormat::Pe(PeInfo {
                machine: 0x8664,
                magic: Some(0x20b),
                subsystem: Some(3),
                imports: imports.iter().map(ToString::to_string).collect(),
            }),
            go: None,
            incomplete: vec![],
        }
    }
}
