//! The release side of signatures (issue 35): what cosign stored next to an image in its
//! registry, read and checked. A release is signed and attested when its index and every
//! entry a supported host pulls carry a cosign signature (verified with `--key` when keys are
//! given) and an in-toto attestation whose subject is that entry.
//!
//! - `key`: public keys (`--key PUB.pem`: ECDSA P-256, RSA, Ed25519) and their verification;
//! - `payload`: the stored documents, parsed: signature manifests, referrers lists, the
//!   simple-signing payload, DSSE envelopes and in-toto statements;
//! - `fetch`: reading them from a registry (the `.sig`/`.att` tags, the referrers API or its
//!   tag schema), under the manifest cap.
//!
//! - `release`: the release check (`--signatures`), pure: which manifests must be signed and
//!   attested, and from what `fetch` found, the `signatures` block and its findings;
//! - `policy`: what a cluster's Linux nodes would admit (containers policy.json, registries.d,
//!   ClusterImagePolicy).
//!
//! It produces the verify engine's findings and reports; the engine never imports it.

pub mod fetch;
pub mod key;
pub mod payload;
pub mod policy;
pub mod release;

pub use fetch::{Found, Stored, find, sigstore_attachments};
pub use key::PublicKey;
pub use release::{SignatureCheck, judge_signatures, signed_subjects};
