//! The registry entries every input format becomes: a [`Registry`] with its [`Mirror`]s, each
//! serving some pulls ([`PullFrom`]); and each mirror-set entry as written ([`MirrorSet`]),
//! which Windows nodes read in their own way (`mirror::hosts`).

/// Which pulls a mirror serves (registries.conf `pull-from-mirror`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum PullFrom {
    /// Digest and tag pulls.
    All,
    /// Digest pulls only (IDMS, ICSP, `mirror-by-digest-only`).
    DigestOnly,
    /// Tag pulls only (ITMS).
    TagOnly,
}

impl PullFrom {
    /// Does a mirror with this setting serve a pull by digest (`true`) or by tag (`false`)?
    pub fn serves(self, by_digest: bool) -> bool {
        match self {
            PullFrom::All => true,
            PullFrom::DigestOnly => by_digest,
            PullFrom::TagOnly => !by_digest,
        }
    }

    /// The registries.conf spelling.
    pub fn name(self) -> &'static str {
        match self {
            PullFrom::All => "all",
            PullFrom::DigestOnly => "digest-only",
            PullFrom::TagOnly => "tag-only",
        }
    }
}

/// One mirror of a registry entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mirror {
    /// `host[:port][/path]`, no trailing slash.
    pub location: String,
    /// Which pulls it serves.
    pub pull_from: PullFrom,
    /// Where it was configured (file and object).
    pub origin: String,
}

/// A registry entry: references under `prefix` are pulled from the mirrors, in order, then
/// from `location` unless `blocked`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Registry {
    /// `host[:port][/path]` or `*.domain`.
    pub prefix: String,
    /// The source location the prefix maps to (empty for a wildcard prefix: the reference
    /// itself).
    pub location: String,
    /// The source may not be contacted (`blocked`, `NeverContactSource`).
    pub blocked: bool,
    /// Mirrors, in the order a node tries them.
    pub mirrors: Vec<Mirror>,
    /// Where the entry was configured.
    pub origin: String,
}

/// An entry's `mirrorSourcePolicy` as written. Unset is its own value: WMCO's `mergeMirrorSets`
/// compares the policy with the string `AllowContactingSource`, and an unset policy is Go's
/// empty string (docs/mirroring.md, "Windows nodes").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourcePolicy {
    /// No `mirrorSourcePolicy` (and every ICSP entry): the source is contacted last.
    Unset,
    /// `AllowContactingSource`: the source is contacted last.
    AllowContactingSource,
    /// `NeverContactSource`: the source is never contacted.
    NeverContactSource,
}

impl SourcePolicy {
    /// `NeverContactSource`?
    pub fn never_contact(self) -> bool {
        self == SourcePolicy::NeverContactSource
    }
}

/// The kind of cluster object a mirror-set entry comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MirrorSetKind {
    /// `ImageDigestMirrorSet`: mirrors serve digest pulls.
    Idms,
    /// `ImageTagMirrorSet`: mirrors serve tag pulls.
    Itms,
    /// `ImageContentSourcePolicy` (deprecated since OpenShift 4.13): digest pulls, Linux
    /// nodes only.
    Icsp,
}

impl MirrorSetKind {
    /// Which pulls its mirrors serve on a Linux node.
    pub fn pull_from(self) -> PullFrom {
        match self {
            MirrorSetKind::Idms | MirrorSetKind::Icsp => PullFrom::DigestOnly,
            MirrorSetKind::Itms => PullFrom::TagOnly,
        }
    }
}

/// One entry of an IDMS, ITMS or ICSP as written (source and mirrors validated), in document
/// order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MirrorSet {
    /// The object kind.
    pub kind: MirrorSetKind,
    /// `host[:port][/path]` (or `*.domain` for IDMS/ITMS).
    pub source: String,
    /// The mirrors, `host[:port][/path]`, in the order written.
    pub mirrors: Vec<String>,
    /// `mirrorSourcePolicy`, as written.
    pub policy: SourcePolicy,
    /// Where it was configured (file and object).
    pub origin: String,
    /// Its place in the file (document, object, `spec.<field>[i]`).
    pub at: String,
}
