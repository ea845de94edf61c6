//! The registry entries every input format becomes: a [`Registry`] with its [`Mirror`]s, each
//! serving some pulls ([`PullFrom`]).

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
