//! The one table of rules: each [`Rule`] with its stable id, its severity, the command that
//! reports it and the hint that says how to fix it.
//!
//! Adding a rule is one variant of [`Rule`] and one row of [`RULES`], in the same place of
//! both (a compile-time check holds the table to the declaration order).

use std::fmt;

use serde::{Serialize, Serializer};

use super::severity::Severity;

/// Every rule, with a stable id. Its row in the rule table (`RULES`) says the rest; declaration
/// order is the table's order: the verify rules, then the mirror-check rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Rule {
    /// Single manifest where the policy needs several platforms.
    NotAnIndex,
    /// A supported host would select nothing.
    NoMatch,
    /// A Windows entry has no os.version.
    OsVersionMissing,
    /// An entry's platform disagrees with its config.
    PlatformMismatch,
    /// A supported host would pull an image it cannot run.
    WrongBuildSelected,
    /// A child manifest or config does not exist.
    ChildMissing,
    /// Bytes do not match their digest or size.
    DigestMismatch,
    /// Two runnable entries claim the same platform.
    DuplicatePlatform,
    /// A layer is foreign or non-distributable.
    ForeignLayer,
    /// A Windows layer is not in the Windows layout.
    WindowsLayerFormat,
    /// A Windows entry no supported host selects.
    UnsupportedBuild,
    /// An obsolete schema1 manifest.
    Schema1,
    /// Unparsable content.
    BadManifest,
    /// An attestation entry (never selected).
    Attestation,
    /// Part of the graph could not be fetched.
    FetchError,
    /// The reference's tag or repository does not exist (registry 404): asking again
    /// cannot fix it.
    NotFound,
    /// A list entry states an os.version its image config does not have.
    OsVersionNotInConfig,
    /// With `--deep`, a Windows layer that was not read (foreign): its format is unknown.
    LayerNotChecked,
    /// A release component the policy (or `--release-image`) names is not in the release
    /// payload (`--from-release`).
    ReleaseImageMissing,
    /// The pods that use the image can land on none of the hosts judged (`--from-manifests`):
    /// only its content was checked.
    NoHostInScope,
    /// With `--deep`, the program an entry's command names is in none of its layers.
    EntrypointMissing,
    /// With `--deep`, the program an entry runs is built for another platform.
    BinaryPlatformMismatch,
    /// With `--deep`, a Windows program imports a DLL the image does not provide.
    DllMissing,
    /// With `--deep`, the entries of one list come from different source revisions.
    SourceSkew,
    /// With `--deep`, entries of a list that name no source revision.
    NoSourceRevision,
    /// With `--signatures`, the index or an entry a supported host pulls has no cosign
    /// signature.
    SignatureMissing,
    /// With `--signatures`, signatures are there but none is valid (malformed, for another
    /// digest, or, with `--key`, made with none of the keys).
    SignatureInvalid,
    /// With `--signatures`, the index or an entry a supported host pulls has no in-toto
    /// attestation about it (verified with `--key` when keys are given).
    AttestationMissing,
    /// The Linux and Windows halves of one CSI driver (two workloads or release components,
    /// or one image's Linux and Windows entries) come from different source revisions or
    /// versions; also, as information, the skew a rollout from the current halves to the
    /// target ones passes through.
    DriverSkew,
    /// With `--signature-policy`/`--image-policy`, a Linux node's CRI-O would refuse the pull
    /// under the cluster's signature policy (containers/image's decision, predicted).
    SignatureRejected,
    /// With `--signature-policy`/`--image-policy`, the policy's requirement for a Linux pull
    /// cannot be checked offline (GPG `signedBy`, Fulcio/PKI certificates, Rekor SETs).
    SignatureNotPredicted,
    /// With `--deep`, a Windows driver dials a CSI Proxy API group version the nodes' CSI
    /// Proxy does not serve, or the nodes' CSI Proxy is older than the driver's minimum.
    CsiProxyIncompatible,
    /// Whether a Windows driver and the nodes' CSI Proxy agree cannot be told (the nodes'
    /// release unknown, or a version the CSI Proxy table does not place).
    CsiProxyUnknown,
    /// No mirror configuration entry covers the reference (mirror-check).
    MirrorNotConfigured,
    /// A tag reference whose mirrors serve digest pulls only (mirror-check).
    MirrorTagIgnored,
    /// No configured mirror holds the image (mirror-check).
    MirrorMissing,
    /// The mirror holds another index than the source under the same name (mirror-check).
    MirrorDigestDiffers,
    /// A child manifest, config or layer is absent from the mirror (mirror-check).
    MirrorChildMissing,
    /// Entries a host of the policy needs (Linux or Windows) are not in the mirror's copy, or
    /// will be left out by an oc-mirror platform filter (mirror-check).
    MirrorPlatformDropped,
    /// Windows nodes request the image where the mirror does not hold it (the WMCO/containerd
    /// path), while the mirror holds it elsewhere (mirror-check).
    MirrorWindowsPath,
    /// A foreign/non-distributable layer's blob is not in the mirror (mirror-check).
    ForeignLayerNotMirrored,
    /// Where the image is pulled from under the mirror configuration (mirror-check).
    MirrorResolved,
    /// An ImageSetConfiguration's `targetRepo`/`targetTag` puts the image where the nodes will
    /// not look for it (mirror-check --pre --from-imageset).
    MirrorTargetMoved,
    /// A cosign signature or attestation the source holds for the index or an entry Linux
    /// nodes pull is not in the mirror they pull from (mirror-check).
    MirrorSignatureMissing,
}

/// Which command reports a rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Command {
    /// `verify` (and the commands that verify: `assemble`, `build`).
    Verify,
    /// `mirror-check` only.
    MirrorCheck,
}

/// One row of the rule table.
#[derive(Debug)]
struct RuleInfo {
    /// The rule the row describes (its place in the table is its declaration order).
    rule: Rule,
    /// The stable id: kebab-case, unique, shown in every output.
    id: &'static str,
    /// How serious a finding of this rule is.
    severity: Severity,
    /// The command that reports it.
    command: Command,
    /// How to fix it.
    hint: &'static str,
}

/// The rule table: one row per [`Rule`], in declaration order.
const RULES: &[RuleInfo] = &[
    RuleInfo {
        rule: Rule::NotAnIndex,
        id: "not-an-index",
        severity: Severity::Error,
        command: Command::Verify,
        hint: "publish a manifest list with one entry per platform (imgcheck assemble)",
    },
    RuleInfo {
        rule: Rule::NoMatch,
        id: "no-match",
        severity: Severity::Error,
        command: Command::Verify,
        hint: "add an entry built for this host's Windows build/architecture, with os.version set from the image config",
    },
    RuleInfo {
        rule: Rule::OsVersionMissing,
        id: "os-version-missing",
        severity: Severity::Error,
        command: Command::Verify,
        hint: "set os.version on the entry from the image config (buildah manifest add without --all, or imgcheck assemble); an image for HostProcess pods runs on every build: judge it with windows.isolation: hostprocess (policy openshift-hostprocess)",
    },
    RuleInfo {
        rule: Rule::PlatformMismatch,
        id: "platform-mismatch",
        severity: Severity::Error,
        command: Command::Verify,
        hint: "rebuild the list so each entry's platform is copied from the child's config",
    },
    RuleInfo {
        rule: Rule::WrongBuildSelected,
        id: "wrong-build-selected",
        severity: Severity::Error,
        command: Command::Verify,
        hint: "fix the entry's os.version, or add an entry for this build, so the host selects an image it can run",
    },
    RuleInfo {
        rule: Rule::ChildMissing,
        id: "child-missing",
        severity: Severity::Error,
        command: Command::Verify,
        hint: "push the missing manifest/blob to the same repository (copy with --all), then re-check",
    },
    RuleInfo {
        rule: Rule::DigestMismatch,
        id: "digest-mismatch",
        severity: Severity::Error,
        command: Command::Verify,
        hint: "the registry, mirror or layout serves corrupted content: re-push or re-mirror the image",
    },
    RuleInfo {
        rule: Rule::DuplicatePlatform,
        id: "duplicate-platform",
        severity: Severity::Error,
        command: Command::Verify,
        hint: "remove one of the entries; only the first one in containerd's order is ever pulled",
    },
    RuleInfo {
        rule: Rule::ForeignLayer,
        id: "foreign-layer",
        severity: Severity::Warning,
        command: Command::Verify,
        hint: "rebase on a base image without foreign layers, or mirror with a tool that copies them ('regctl image copy --include-external', 'crane copy --allow-nondistributable-artifacts'); skopeo copy leaves them out",
    },
    RuleInfo {
        rule: Rule::WindowsLayerFormat,
        id: "windows-layer-format",
        severity: Severity::Error,
        command: Command::Verify,
        hint: "build Windows images with Buildah >= 1.44 (or docker/buildkit on Windows) so layers use Files/ and Hives/",
    },
    RuleInfo {
        rule: Rule::UnsupportedBuild,
        id: "unsupported-build",
        severity: Severity::Info,
        command: Command::Verify,
        hint: "drop the entry or add its build to the policy if such nodes exist",
    },
    RuleInfo {
        rule: Rule::Schema1,
        id: "schema1",
        severity: Severity::Error,
        command: Command::Verify,
        hint: "re-push the image with a current tool: schema1 is obsolete and refused by containerd 2",
    },
    RuleInfo {
        rule: Rule::BadManifest,
        id: "bad-manifest",
        severity: Severity::Error,
        command: Command::Verify,
        hint: "re-push the image; the content is not a valid OCI/Docker manifest",
    },
    RuleInfo {
        rule: Rule::Attestation,
        id: "attestation",
        severity: Severity::Info,
        command: Command::Verify,
        hint: "none needed: attestation entries are metadata, never pulled",
    },
    RuleInfo {
        rule: Rule::FetchError,
        id: "fetch-error",
        severity: Severity::Error,
        command: Command::Verify,
        hint: "check network access, credentials (--authfile) and --tls-verify, then re-run",
    },
    RuleInfo {
        rule: Rule::NotFound,
        id: "not-found",
        severity: Severity::Error,
        command: Command::Verify,
        hint: "check the reference for typos (registry, repository, tag); a private repository answers 404 to anonymous clients, so pass --creds/--authfile or log in with 'podman login'",
    },
    RuleInfo {
        rule: Rule::OsVersionNotInConfig,
        id: "os-version-not-in-config",
        severity: Severity::Warning,
        command: Command::Verify,
        hint: "build the image with that os.version (buildah build --os-version, or FROM a base that has it), or drop os.version from the entry if the image runs on every build (HostProcess)",
    },
    RuleInfo {
        rule: Rule::LayerNotChecked,
        id: "layer-not-checked",
        severity: Severity::Warning,
        command: Command::Verify,
        hint: "check the image the foreign layer comes from (its publisher's base image), or mirror it with its blobs so --deep can read it",
    },
    RuleInfo {
        rule: Rule::ReleaseImageMissing,
        id: "release-image-missing",
        severity: Severity::Error,
        command: Command::Verify,
        hint: "check the component name against 'oc adm release info --pullspecs RELEASE'; a payload without it cannot serve the Windows nodes that need it",
    },
    RuleInfo {
        rule: Rule::NoHostInScope,
        id: "no-host-in-scope",
        severity: Severity::Warning,
        command: Command::Verify,
        hint: "check the pod's nodeSelector/affinity and the node list: no node imgcheck judged can run these pods, so only the image's content was checked",
    },
    RuleInfo {
        rule: Rule::EntrypointMissing,
        id: "entrypoint-missing",
        severity: Severity::Error,
        command: Command::Verify,
        hint: "copy the program into the image at the path the entrypoint names (or fix ENTRYPOINT/CMD, WorkingDir or PATH): the container cannot start",
    },
    RuleInfo {
        rule: Rule::BinaryPlatformMismatch,
        id: "binary-platform-mismatch",
        severity: Severity::Error,
        command: Command::Verify,
        hint: "build the program for the entry's platform (Go: GOOS/GOARCH/GOARM as the entry says) and rebuild the image: a node cannot run it",
    },
    RuleInfo {
        rule: Rule::DllMissing,
        id: "dll-missing",
        severity: Severity::Error,
        command: Command::Verify,
        hint: "copy the DLL next to the program or into Windows\\System32 (e.g. from servercore into a nanoserver image, as buildah/azurefile-csi does), or build on a base that has it",
    },
    RuleInfo {
        rule: Rule::SourceSkew,
        id: "source-skew",
        severity: Severity::Warning,
        command: Command::Verify,
        hint: "build every entry of the list from the same commit (one revision label, one vcs.revision) and re-assemble the list",
    },
    RuleInfo {
        rule: Rule::NoSourceRevision,
        id: "no-source-revision",
        severity: Severity::Info,
        command: Command::Verify,
        hint: "label the images with org.opencontainers.image.revision (buildah build --label, docker build --label) so a list can be traced to one commit",
    },
    RuleInfo {
        rule: Rule::SignatureMissing,
        id: "signature-missing",
        severity: Severity::Error,
        command: Command::Verify,
        hint: "build the entry in the release pipeline (Konflux signs what it builds), or sign it: 'cosign sign --key KEY REF@DIGEST', 'skopeo copy --sign-by-sigstore-private-key KEY'; a list and each entry are signed apart",
    },
    RuleInfo {
        rule: Rule::SignatureInvalid,
        id: "signature-invalid",
        severity: Severity::Error,
        command: Command::Verify,
        hint: "re-sign the entry with the release key (the one --key names); a signature made for another digest or with another key proves nothing about this one",
    },
    RuleInfo {
        rule: Rule::AttestationMissing,
        id: "attestation-missing",
        severity: Severity::Error,
        command: Command::Verify,
        hint: "attest the entry where it is built (Tekton Chains writes SLSA provenance; 'cosign attest --key KEY --predicate FILE REF@DIGEST'), with the entry's own digest as the statement's subject",
    },
    RuleInfo {
        rule: Rule::DriverSkew,
        id: "driver-skew",
        severity: Severity::Warning,
        command: Command::Verify,
        hint: "build the Linux and Windows images of the driver from the same commit and version, and ship them in the same release; while two revisions must run side by side (a rollout), test that pair",
    },
    RuleInfo {
        rule: Rule::SignatureRejected,
        id: "signature-rejected",
        severity: Severity::Error,
        command: Command::Verify,
        hint: "sign the entry a Linux node pulls (not only the list) with a key of the scope's policy, naming the identity its signedIdentity accepts, and copy the sha256-<hex>.sig tag to the repository the node pulls from (the mirror: 'oc-mirror' / 'skopeo copy --all' copy signatures); or fix the scope (remapIdentity for images pulled by the mirror's name)",
    },
    RuleInfo {
        rule: Rule::SignatureNotPredicted,
        id: "signature-not-predicted",
        severity: Severity::Warning,
        command: Command::Verify,
        hint: "check this pull on a node (podman pull --signature-policy /etc/containers/policy.json): imgcheck does not verify GPG signatures, Fulcio or PKI certificates, or Rekor SETs offline",
    },
    RuleInfo {
        rule: Rule::CsiProxyIncompatible,
        id: "csi-proxy-incompatible",
        severity: Severity::Error,
        command: Command::Verify,
        hint: "run a CSI Proxy release that serves the API group versions the driver dials (upgrade csi-proxy on the Windows nodes), or build the driver against a csi-proxy client whose groups the nodes' release serves",
    },
    RuleInfo {
        rule: Rule::CsiProxyUnknown,
        id: "csi-proxy-unknown",
        severity: Severity::Warning,
        command: Command::Verify,
        hint: "name the CSI Proxy release the Windows nodes run (policy windows.csi_proxy.version), or give the csi-proxy DaemonSet with --from-manifests and read it with --deep",
    },
    RuleInfo {
        rule: Rule::MirrorNotConfigured,
        id: "mirror-not-configured",
        severity: Severity::Error,
        command: Command::MirrorCheck,
        hint: "add the source (or a parent namespace) to an ImageDigestMirrorSet, or reference the image from the mirror directly",
    },
    RuleInfo {
        rule: Rule::MirrorTagIgnored,
        id: "mirror-tag-ignored",
        severity: Severity::Warning,
        command: Command::MirrorCheck,
        hint: "reference the image by digest (IDMS mirrors serve digest pulls only), or add an ImageTagMirrorSet",
    },
    RuleInfo {
        rule: Rule::MirrorMissing,
        id: "mirror-missing",
        severity: Severity::Error,
        command: Command::MirrorCheck,
        hint: "mirror the image with 'skopeo copy --all --preserve-digests' (or oc-mirror) before releasing it",
    },
    RuleInfo {
        rule: Rule::MirrorDigestDiffers,
        id: "mirror-digest-differs",
        severity: Severity::Error,
        command: Command::MirrorCheck,
        hint: "re-mirror with 'skopeo copy --all --preserve-digests': filtering or re-serialising the list changes its digest and breaks digest references",
    },
    RuleInfo {
        rule: Rule::MirrorChildMissing,
        id: "mirror-child-missing",
        severity: Severity::Error,
        command: Command::MirrorCheck,
        hint: "re-mirror with 'skopeo copy --all --preserve-digests' so every child manifest, config and layer is copied",
    },
    RuleInfo {
        rule: Rule::MirrorPlatformDropped,
        id: "mirror-platform-dropped",
        severity: Severity::Error,
        command: Command::MirrorCheck,
        hint: "mirror every platform the nodes need: drop --filter-by-os, or add the platform named to the oc-mirror 'platforms' filter; copy with 'skopeo copy --all'",
    },
    RuleInfo {
        rule: Rule::MirrorWindowsPath,
        id: "mirror-windows-path",
        severity: Severity::Error,
        command: Command::MirrorCheck,
        hint: "Windows nodes (WMCO, containerd) request MIRROR-HOST/MIRROR-PATH/<full source repository>: mirror the image keeping the source path (e.g. mirror.example.com:5000/openshift-release-dev/ocp-v4.0-art-dev), and point one ImageDigestMirrorSet entry per registry host at it (source: quay.io, mirrors: [mirror.example.com:5000]) so Linux and Windows nodes look in the same place",
    },
    RuleInfo {
        rule: Rule::ForeignLayerNotMirrored,
        id: "foreign-layer-not-mirrored",
        severity: Severity::Error,
        command: Command::MirrorCheck,
        hint: "copy foreign layers too (oc image mirror / regctl --include-external), or rebase on a base without foreign layers",
    },
    RuleInfo {
        rule: Rule::MirrorResolved,
        id: "mirror-resolved",
        severity: Severity::Info,
        command: Command::MirrorCheck,
        hint: "none needed",
    },
    RuleInfo {
        rule: Rule::MirrorTargetMoved,
        id: "mirror-target-moved",
        severity: Severity::Error,
        command: Command::MirrorCheck,
        hint: "drop targetRepo/targetTag from the ImageSetConfiguration entry, or end targetRepo with the source repository path: Windows nodes (WMCO) ask each mirror registry for the source's own path, and a pull by tag asks for the source's tag",
    },
    RuleInfo {
        rule: Rule::MirrorSignatureMissing,
        id: "mirror-signature-missing",
        severity: Severity::Warning,
        command: Command::MirrorCheck,
        hint: "copy the signatures with the image: oc-mirror v2 does unless --remove-signatures (.sig only); 'skopeo copy --all' does with a registries.d that sets use-sigstore-attachments: true (.sig only); 'cosign copy SRC DST' copies signatures and attestations",
    },
];

// Row `i` describes the rule declared `i`-th, so a rule finds its row by its discriminant.
const _: () = {
    let mut i = 0;
    while i < RULES.len() {
        assert!(
            RULES[i].rule as usize == i,
            "RULES is not in Rule's declaration order"
        );
        i += 1;
    }
};

impl Rule {
    /// Every rule, in declaration order: the verify rules, then the mirror-check rules.
    pub const ALL: [Rule; RULES.len()] = {
        let mut all = [Rule::NotAnIndex; RULES.len()];
        let mut i = 0;
        while i < RULES.len() {
            all[i] = RULES[i].rule;
            i += 1;
        }
        all
    };

    /// The rule's row of [`RULES`].
    fn info(self) -> &'static RuleInfo {
        &RULES[self as usize]
    }

    /// True for the rules only `mirror-check` reports.
    pub fn is_mirror(self) -> bool {
        self.info().command == Command::MirrorCheck
    }

    /// The rule's stable id.
    pub fn id(self) -> &'static str {
        self.info().id
    }

    /// How serious a finding of this rule is.
    pub fn severity(self) -> Severity {
        self.info().severity
    }

    /// How to fix it.
    pub fn hint(self) -> &'static str {
        self.info().hint
    }
}

impl fmt::Display for Rule {
    /// The id, padded like a `str` when a width is given.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.id())
    }
}

/// A rule serialises as its id (`"rule": "no-match"`).
impl Serialize for Rule {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.id())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    #[test]
    fn every_rule_has_an_id_severity_and_hint() {
        let rules = [
            Rule::NotAnIndex,
            Rule::NoMatch,
            Rule::OsVersionMissing,
            Rule::PlatformMismatch,
            Rule::WrongBuildSelected,
            Rule::ChildMissing,
            Rule::DigestMismatch,
            Rule::DuplicatePlatform,
            Rule::ForeignLayer,
            Rule::WindowsLayerFormat,
            Rule::UnsupportedBuild,
            Rule::Schema1,
            Rule::BadManifest,
            Rule::Attestation,
            Rule::FetchError,
            Rule::NotFound,
        ];
        let ids: BTreeSet<&str> = rules.iter().map(|r| r.id()).collect();
        assert_eq!(ids.len(), rules.len(), "ids are unique");
        for r in rules {
            assert!(!r.hint().is_empty());
            assert!(
                r.id()
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c == '-' || c.is_ascii_digit())
            );
        }
        assert_eq!(Rule::ForeignLayer.severity(), Severity::Warning);
        assert_eq!(Rule::Attestation.severity(), Severity::Info);
        assert_eq!(Rule::NoMatch.severity(), Severity::Error);
    }

    #[test]
    fn all_lists_every_rule_once_and_shows_its_id() {
        // Exhaustive: a new variant fails to compile here until it gets a place; its row in
        // RULES (hence ALL) must sit at that place.
        let position = |r: Rule| match r {
            Rule::NotAnIndex => 0,
            Rule::NoMatch => 1,
            Rule::OsVersionMissing => 2,
            Rule::PlatformMismatch => 3,
            Rule::WrongBuildSelected => 4,
            Rule::ChildMissing => 5,
            Rule::DigestMismatch => 6,
            Rule::DuplicatePlatform => 7,
            Rule::ForeignLayer => 8,
            Rule::WindowsLayerFormat => 9,
            Rule::UnsupportedBuild => 10,
            Rule::Schema1 => 11,
            Rule::BadManifest => 12,
            Rule::Attestation => 13,
            Rule::FetchError => 14,
            Rule::NotFound => 15,
            Rule::OsVersionNotInConfig => 16,
            Rule::LayerNotChecked => 17,
            Rule::ReleaseImageMissing => 18,
            Rule::NoHostInScope => 19,
            Rule::EntrypointMissing => 20,
            Rule::BinaryPlatformMismatch => 21,
            Rule::DllMissing => 22,
            Rule::SourceSkew => 23,
            Rule::NoSourceRevision => 24,
            Rule::SignatureMissing => 25,
            Rule::SignatureInvalid => 26,
            Rule::AttestationMissing => 27,
            Rule::DriverSkew => 28,
            Rule::SignatureRejected => 29,
            Rule::SignatureNotPredicted => 30,
            Rule::CsiProxyIncompatible => 31,
            Rule::CsiProxyUnknown => 32,
            Rule::MirrorNotConfigured => 33,
            Rule::MirrorTagIgnored => 34,
            Rule::MirrorMissing => 35,
            Rule::MirrorDigestDiffers => 36,
            Rule::MirrorChildMissing => 37,
            Rule::MirrorPlatformDropped => 38,
            Rule::MirrorWindowsPath => 39,
            Rule::ForeignLayerNotMirrored => 40,
            Rule::MirrorResolved => 41,
            Rule::MirrorTargetMoved => 42,
            Rule::MirrorSignatureMissing => 43,
        };
        for (i, r) in Rule::ALL.iter().enumerate() {
            assert_eq!(position(*r), i, "{r:?}");
            assert_eq!(r.to_string(), r.id());
            assert_eq!(serde_json::to_value(r).unwrap(), r.id());
            assert_eq!(r.is_mirror(), i >= 33, "{r}");
        }
        let ids: BTreeSet<&str> = Rule::ALL.iter().map(|r| r.id()).collect();
        assert_eq!(ids.len(), Rule::ALL.len());
        assert_eq!(format!("[{:<10}]", Rule::Schema1), "[schema1   ]");
    }

    #[test]
    fn the_table_has_one_row_per_rule_with_a_kebab_case_id_and_a_hint() {
        assert_eq!(RULES.len(), Rule::ALL.len());
        assert_eq!(Rule::ALL.len(), 44);
        for (i, row) in RULES.iter().enumerate() {
            assert_eq!(row.rule as usize, i, "{row:?}");
            assert_eq!(row.rule.info().id, row.id);
            assert!(!row.hint.is_empty(), "{}", row.id);
            let kebab = !row.id.starts_with('-')
                && !row.id.ends_with('-')
                && !row.id.contains("--")
                && row
                    .id
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
            assert!(kebab, "{}", row.id);
        }
    }

    #[test]
    fn severities() {
        for r in Rule::ALL {
            let want = match r {
                Rule::ForeignLayer
                | Rule::LayerNotChecked
                | Rule::MirrorTagIgnored
                | Rule::NoHostInScope
                | Rule::SourceSkew
                | Rule::MirrorSignatureMissing
                | Rule::DriverSkew
                | Rule::SignatureNotPredicted
                | Rule::CsiProxyUnknown
                | Rule::OsVersionNotInConfig => Severity::Warning,
                Rule::UnsupportedBuild
                | Rule::Attestation
                | Rule::MirrorResolved
                | Rule::NoSourceRevision => Severity::Info,
                _ => Severity::Error,
            };
            assert_eq!(r.severity(), want, "{r}");
        }
    }
}
