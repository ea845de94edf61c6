//! The `binaries` block of a report: per image read with `--deep`, the program its container
//! starts (and the interpreters on the way), what its headers say, and the source revisions
//! the image names (schema: docs/json-schema.md, "binaries").

use serde::Serialize;

use crate::binary::{
    BinaryFormat, BinaryInfo, GoBuildInfo, GoModule, elf_machine_name, pe_machine_name,
};
use crate::graph::{EntryCheck, Image, LookupOutcome, Node};

/// Labels that name the commit an image was built from, in the order they are read
/// (OCI image spec annotations; label-schema's `vcs-ref`; OpenShift's build labels).
pub const REVISION_LABELS: [&str; 3] = [
    "org.opencontainers.image.revision",
    "vcs-ref",
    "io.openshift.build.commit.id",
];

/// One image of the graph read with `--deep`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BinaryEntry {
    /// The image's platform, from its config: `os/architecture[/variant]`, with
    /// `:os.version` for Windows (`windows/amd64:10.0.17763.1`).
    pub entry: String,
    /// The image manifest's digest.
    pub digest: String,
    /// `Entrypoint` then `Cmd`.
    pub command: Vec<String>,
    /// The program, then each interpreter on the way.
    pub programs: Vec<ProgramReport>,
    /// Every source revision the image names.
    pub revisions: Vec<Revision>,
}

/// A source revision and where it was read.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Revision {
    /// A label name, or `go vcs.revision of PATH`.
    pub source: String,
    /// The revision.
    pub revision: String,
}

/// One program of a [`BinaryEntry`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProgramReport {
    /// The name as the command (or `#!` line) gives it.
    pub name: String,
    /// `found`, `missing` or `not-checked`.
    pub status: &'static str,
    /// Every path looked up, in the runtime's order.
    pub looked_up: Vec<String>,
    /// Where it was found.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// `pe`, `elf`, `script` or `other`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub format: Option<&'static str>,
    /// The machine (`AMD64`, `x86-64`, `AArch64`…); a script's interpreter.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub machine: Option<String>,
    /// A short description ("PE32+ AMD64 console", "ELF 64-bit LSB x86-64").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The Go build information, for a Go program.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub go: Option<GoReport>,
    /// For a PE program whose imports were checked: the DLLs the image lacks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dlls_missing: Option<Vec<String>>,
    /// What could not be read or told, in words.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// The Go build information of a program.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GoReport {
    /// Toolchain version (`go1.19.8`).
    pub version: String,
    /// Main package path.
    pub path: String,
    /// `GOOS`.
    pub goos: Option<String>,
    /// `GOARCH`.
    pub goarch: Option<String>,
    /// `GOARM`, for `GOARCH=arm`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub goarm: Option<String>,
    /// `vcs.revision`.
    pub revision: Option<String>,
    /// `vcs.modified`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub modified: Option<bool>,
    /// How many module dependencies (`dep` lines) the build information names.
    pub modules: usize,
    /// What the program uses of CSI Proxy, when it is a csi-proxy client.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub csi_proxy: Option<CsiProxyUse>,
}

/// What a Go program uses of CSI Proxy: its client module and the API group versions it
/// embeds (docs/images.md, "CSI Proxy").
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct CsiProxyUse {
    /// The client's module line: `github.com/kubernetes-csi/csi-proxy/client v1.2.1`, with
    /// ` => REPLACEMENT` when the build replaced it; absent when no client module is named.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
    /// The client version whose code was built (a module replacement's, else the required).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The API group versions it embeds (`disk/v1`, `smb/v1beta1`), sorted.
    pub apis: Vec<String>,
}

/// The [`CsiProxyUse`] of a Go program, when it is a csi-proxy client.
pub(super) fn csi_proxy_use(go: &GoBuildInfo) -> Option<CsiProxyUse> {
    let client = go.csi_proxy_client();
    if client.is_none()
        && (go.csi_proxy_apis.is_empty()
            || go.main_module.as_deref() == Some(crate::binary::PROXY_MODULE))
    {
        return None;
    }
    Some(CsiProxyUse {
        client: client.map(GoModule::describe),
        version: client.map(|c| c.built_version().to_string()),
        apis: go.csi_proxy_apis.clone(),
    })
}

/// The image's platform as [`BinaryEntry::entry`] shows it.
pub fn entry_label(image: &Image) -> String {
    let Ok(config) = &image.config else {
        return "unknown".to_string();
    };
    let mut label = format!("{}/{}", config.os, config.architecture);
    if let Some(v) = config.variant.as_deref().filter(|v| !v.is_empty()) {
        label.push('/');
        label.push_str(v);
    }
    if let Some(v) = config.os_version.as_deref().filter(|v| !v.is_empty()) {
        label.push(':');
        label.push_str(v);
    }
    label
}

/// Every source revision an image names: its labels, then each Go program's `vcs.revision`.
pub fn revisions(image: &Image) -> Vec<Revision> {
    let mut out: Vec<Revision> = Vec::new();
    if let Ok(config) = &image.config {
        for label in REVISION_LABELS {
            if let Some(v) = config
                .run
                .labels
                .get(label)
                .filter(|v| !v.trim().is_empty())
            {
                out.push(Revision {
                    source: label.to_string(),
                    revision: v.trim().to_string(),
                });
            }
        }
    }
    for program in image.entry.iter().flat_map(|e| &e.programs) {
        if let LookupOutcome::Found { path, binary, .. } = &program.outcome
            && let Some(rev) = binary.go.as_ref().and_then(|g| g.revision.as_ref())
        {
            out.push(Revision {
                source: format!("go vcs.revision of {path}"),
                revision: rev.clone(),
            });
        }
    }
    out
}

fn format_name(binary: &BinaryInfo) -> (&'static str, Option<String>) {
    match &binary.format {
        BinaryFormat::Pe(pe) => (
            "pe",
            Some(
                pe_machine_name(pe.machine)
                    .map_or_else(|| format!("0x{:x}", pe.machine), str::to_string),
            ),
        ),
        BinaryFormat::Elf(elf) => (
            "elf",
            Some(
                elf_machine_name(elf.machine)
                    .map_or_else(|| elf.machine.to_string(), str::to_string),
            ),
        ),
        BinaryFormat::Script { interpreter, .. } => ("script", Some(interpreter.clone())),
        BinaryFormat::Other { .. } => ("other", None),
    }
}

fn program_report(program: &crate::graph::Program) -> ProgramReport {
    let mut report = ProgramReport {
        name: program.name.clone(),
        status: "missing",
        looked_up: program.looked_up.clone(),
        path: None,
        format: None,
        machine: None,
        description: None,
        go: None,
        dlls_missing: None,
        notes: vec![],
    };
    match &program.outcome {
        LookupOutcome::Missing => {}
        LookupOutcome::CannotRun(why) => {
            report.status = "cannot-run";
            report.notes.push(why.clone());
        }
        LookupOutcome::NotChecked(why) => {
            report.status = "not-checked";
            report.notes.push(why.clone());
        }
        LookupOutcome::Found { path, binary, dlls } => {
            let (format, machine) = format_name(binary);
            report.status = "found";
            report.path = Some(path.clone());
            report.format = Some(format);
            report.machine = machine;
            report.description = Some(binary.describe());
            report.go = binary.go.as_ref().map(|g| GoReport {
                version: g.go_version.clone(),
                path: g.path.clone(),
                goos: g.goos.clone(),
                goarch: g.goarch.clone(),
                goarm: g.goarm.clone(),
                revision: g.revision.clone(),
                modified: g.modified,
                modules: g.deps.len(),
                csi_proxy: csi_proxy_use(g),
            });
            report.notes.extend(binary.incomplete.iter().cloned());
            match dlls {
                Some(Ok(missing)) => report.dlls_missing = Some(missing.clone()),
                Some(Err(why)) => report.notes.push(why.clone()),
                None => {}
            }
        }
    }
    report
}

/// The block for one image node read with `--deep`.
fn entry_of(node: &Node, image: &Image, entry: &EntryCheck) -> BinaryEntry {
    BinaryEntry {
        entry: entry_label(image),
        digest: node.digest.to_string(),
        command: entry.command.clone(),
        programs: entry.programs.iter().map(program_report).collect(),
        revisions: revisions(image),
    }
}

/// The `binaries` block of a graph: one entry per image read with `--deep`, in graph order.
pub fn binaries(nodes: &[&Node]) -> Vec<BinaryEntry> {
    nodes
        .iter()
        .filter_map(|node| {
            let image = node.image()?;
            let entry = image.entry.as_ref()?;
            Some(entry_of(node, image, entry))
        })
        .collect()
}
