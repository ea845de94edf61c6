//! The `signatures` block of a report (`verify --signatures`): how the index and each entry a
//! host pulls stand on cosign signatures and attestations.

use serde::Serialize;

/// Where signatures and attestations of a manifest were found (`signature::find`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Place {
    /// The `sha256-<hex>.sig` / `.att` tags.
    Tag,
    /// The referrers API, or its tag schema.
    Referrers,
}

/// How a manifest stands on signatures or on attestations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Standing {
    /// One verifies with a key given.
    Verified,
    /// One is there and about this manifest; no key was given to verify it.
    Unverified,
    /// Some are there, none valid.
    Invalid,
    /// None is there.
    Missing,
    /// Not required (attestations, under `signatures.attestations: false`).
    NotRequired,
    /// The registry could not be asked: the check did not run.
    NotChecked,
}

/// The `signatures` block of one manifest of a report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SignatureEntry {
    /// `index` (the reference's own manifest), or the hosts that pull the entry.
    pub entry: String,
    /// The manifest's digest.
    pub digest: String,
    /// Signatures found.
    pub signatures: usize,
    /// How it stands on signatures.
    pub signed: Standing,
    /// The `docker-reference` the first valid signature names.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub identity: Option<String>,
    /// Attestations found.
    pub attestations: usize,
    /// How it stands on attestations.
    pub attested: Standing,
    /// Where they were found: `tag` (`sha256-<hex>.sig` / `.att`), `referrers`.
    pub found_in: Vec<Place>,
}

/// One Linux pull and the decision of the signature policy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AdmissionEntry {
    /// The node OS (`linux`).
    pub nodes: &'static str,
    /// The hosts that pull this manifest.
    pub hosts: String,
    /// The image as the node names it.
    pub reference: String,
    /// The manifest whose signature is checked (the entry selected from a list).
    pub digest: String,
    /// The scope that applied: `transports.docker["SCOPE"]` or `default`.
    pub scope: String,
    /// The repository where signatures were looked for (the one pulled from).
    pub looked_in: String,
    /// `admitted`, `rejected`, `not-predicted`.
    pub decision: &'static str,
    /// The requirement that decided (`reject`, `sigstoreSigned`, …), when one did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requirement: Option<&'static str>,
    /// Why (rejected or not predicted).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}
