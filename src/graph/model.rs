//! What the walk finds: the [`Graph`] of [`Node`]s, each an index, an [`Image`] (with its
//! [`Layer`]s) or a [`Problem`].

use crate::binary::BinaryInfo;
use crate::digest::Digest;
use crate::manifest::{Descriptor, ImageConfig, ImageManifest, Index};
use crate::source::FetchError;

/// Something wrong with one object of the graph.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// The object does not exist.
    Missing(String),
    /// Its bytes do not match the digest or size that named them.
    DigestMismatch(String),
    /// It could not be parsed (or is too large, or nested too deep).
    Bad(String),
    /// It could not be fetched (network, auth): the check did not run.
    Unavailable(String),
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Problem::Missing(m) => write!(f, "missing: {m}"),
            Problem::DigestMismatch(m) => write!(f, "digest mismatch: {m}"),
            Problem::Bad(m) => write!(f, "unusable: {m}"),
            Problem::Unavailable(m) => write!(f, "could not be fetched: {m}"),
        }
    }
}

impl std::error::Error for Problem {}

impl Problem {
    /// The problem a failed fetch leaves on a node.
    pub(super) fn from_fetch(err: FetchError) -> Problem {
        match err {
            FetchError::NotFound(m) => Problem::Missing(m),
            e @ FetchError::DigestMismatch { .. } => Problem::DigestMismatch(e.to_string()),
            e @ FetchError::TooLarge { .. } => Problem::Bad(e.to_string()),
            FetchError::BadInput(m) => Problem::Bad(m.line()),
            FetchError::Unavailable(m) => Problem::Unavailable(m.line()),
        }
    }
}

/// The result of reading one Windows layer with `--deep`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LayerFormat {
    /// Every entry is under `Files/`, `Hives/` or `UtilityVM/`.
    Windows,
    /// Entries outside the Windows layout: how many, and the first few names.
    NotWindows {
        /// Entries outside the layout.
        outside: usize,
        /// Up to three of their names.
        examples: Vec<String>,
    },
    /// The layer holds nothing to check (no entries), and why.
    Skipped(String),
    /// The layer was not read, so its format is unknown, and why (a foreign layer: `--deep`
    /// does not fetch it).
    NotChecked(String),
    /// Reading it failed.
    Failed(Problem),
}

/// A layer of an image, with the `--deep` result when requested.
#[derive(Debug, Clone)]
pub struct Layer {
    /// The layer's descriptor.
    pub descriptor: Descriptor,
    /// Its format check, when `--deep` read it.
    pub format: Option<LayerFormat>,
}

/// An image manifest and what was learned from its config and layers.
#[derive(Debug, Clone)]
pub struct Image {
    /// The manifest.
    pub manifest: ImageManifest,
    /// The config, or why it is unusable.
    pub config: Result<ImageConfig, Problem>,
    /// Layers, base first.
    pub layers: Vec<Layer>,
    /// With `--deep`: the program the image runs, found in its layers and read (Windows
    /// images; Linux images unless the policy's `deep.linux` is false).
    pub entry: Option<EntryCheck>,
}

/// What `--deep` found out about the program an image's container starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryCheck {
    /// The command (`Entrypoint` then `Cmd`); empty when the config names none.
    pub command: Vec<String>,
    /// The program, then the interpreter of each script on the way (`#!`).
    pub programs: Vec<Program>,
}

/// One program of an [`EntryCheck`]: the command's first word, or a script's interpreter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Program {
    /// The name as the command (or the `#!` line) gives it.
    pub name: String,
    /// Every path looked up, in the runtime's order, as the image names them
    /// (`C:\app\driver.exe`, `/usr/bin/driver`).
    pub looked_up: Vec<String>,
    /// What was found.
    pub outcome: LookupOutcome,
}

/// Where a [`Program`] lookup ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LookupOutcome {
    /// The file, with what its headers say.
    Found {
        /// Its path in the image (`C:\app\driver.exe`, `/usr/bin/driver`).
        path: String,
        /// Its format, machine, imports and Go build information.
        binary: Box<BinaryInfo>,
        /// For a PE program: the imported DLLs the image does not provide (empty: all of
        /// them are there), or why that could not be told; `None` for other formats.
        dlls: Option<Result<Vec<String>, String>>,
    },
    /// No layer has it: the container cannot start.
    Missing,
    /// It is there but the runtime or the kernel refuses to run it (no execute bit, a
    /// directory, a symbolic link loop, a name too long, `#!` nested too deep), and why:
    /// the container cannot start.
    CannotRun(String),
    /// It could not be told (a layer that was not read could hold or replace it, a layer
    /// that could not be read, a file too odd to follow), and why.
    NotChecked(String),
}

/// What a node turned out to be.
#[derive(Debug, Clone)]
pub enum Content {
    /// A list; `children[i]` is entry `i`'s node (`None` for an `unknown/unknown` entry, which
    /// no runtime selects, not fetched).
    Index {
        /// The parsed list.
        index: Index,
        /// One slot per entry.
        children: Vec<Option<Node>>,
    },
    /// A single image.
    Image(Box<Image>),
    /// An obsolete schema1 manifest.
    Schema1,
    /// Something went wrong getting or reading it.
    Problem(Problem),
}

/// One object of the graph.
#[derive(Debug, Clone)]
pub struct Node {
    /// Its digest (as named by the referrer; verified unless the content is a problem).
    pub digest: Digest,
    /// Media type the referrer claimed.
    pub media_type: String,
    /// What it is.
    pub content: Content,
    /// When the referrer's claimed media type names another kind than the body's own (the
    /// content is then that problem, as containerd refuses it): the object read by its own
    /// type, as a runtime that takes the type from the registry's answer reads it
    /// (containers/image, `docker_image_src.go` `GetManifest`).
    pub served: Option<Box<Node>>,
}

impl Node {
    /// The node as `profile`'s runtime reads it: the object by its own media type
    /// ([`Node::served`]) for a runtime that reads the type from the registry's answer.
    pub fn read_by(&self, profile: crate::platform::RuntimeProfile) -> &Node {
        match &self.served {
            Some(served) if profile.reads_served_type() => served,
            _ => self,
        }
    }

    /// The image at this node, if it is one with a usable config.
    pub fn image(&self) -> Option<&Image> {
        match &self.content {
            Content::Image(i) => Some(i),
            _ => None,
        }
    }
}

/// The graph for one reference.
#[derive(Debug, Clone)]
pub struct Graph {
    /// The reference as the user gave it.
    pub reference: String,
    /// The top object.
    pub root: Node,
}

impl Graph {
    /// Every node, depth first, root first.
    pub fn nodes(&self) -> Vec<&Node> {
        fn visit<'a>(n: &'a Node, out: &mut Vec<&'a Node>) {
            out.push(n);
            if let Content::Index { children, .. } = &n.content {
                for c in children.iter().flatten() {
                    visit(c, out);
                }
            }
        }
        let mut out = Vec::new();
        visit(&self.root, &mut out);
        out
    }
}
