//! The one table of rules: each [`Rule`] with its stable id, its severity and the hint that
//! says how to fix it.

use std::fmt;

use serde::{Serialize, Serializer};

use super::Severity;

/// Every rule, with a stable id.
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
    /// Windows entries for supported builds are not in the mirror's index (mirror-check).
    MirrorWindowsDropped,
    /// A foreign/non-distributable layer's blob is not in the mirror (mirror-check).
    ForeignLayerNotMirrored,
    /// Where the image is pulled from under the mirror configuration (mirror-check).
    MirrorResolved,
}

impl Rule {
    /// Every rule, in declaration order: the verify rules, then the mirror-check rules.
    pub const ALL: [Rule; 28] = [
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
        Rule::OsVersionNotInConfig,
        Rule::LayerNotChecked,
        Rule::ReleaseImageMissing,
        Rule::NoHostInScope,
        Rule::MirrorNotConfigured,
        Rule::MirrorTagIgnored,
        Rule::MirrorMissing,
        Rule::MirrorDigestDiffers,
        Rule::MirrorChildMissing,
        Rule::MirrorWindowsDropped,
        Rule::ForeignLayerNotMirrored,
        Rule::MirrorResolved,
    ];

    /// True for the rules only `mirror-check` reports.
    pub fn is_mirror(self) -> bool {
        matches!(
            self,
            Rule::MirrorNotConfigured
                | Rule::MirrorTagIgnored
                | Rule::MirrorMissing
                | Rule::MirrorDigestDiffers
                | Rule::MirrorChildMissing
                | Rule::MirrorWindowsDropped
                | Rule::ForeignLayerNotMirrored
                | Rule::MirrorResolved
        )
    }

    /// The rule's stable id.
    pub fn id(self) -> &'static str {
        match self {
            Rule::NotAnIndex => "not-an-index",
            Rule::NoMatch => "no-match",
            Rule::OsVersionMissing => "os-version-missing",
            Rule::PlatformMismatch => "platform-mismatch",
            Rule::WrongBuildSelected => "wrong-build-selected",
            Rule::ChildMissing => "child-missing",
            Rule::DigestMismatch => "digest-mismatch",
            Rule::DuplicatePlatform => "duplicate-platform",
            Rule::ForeignLayer => "foreign-layer",
            Rule::WindowsLayerFormat => "windows-layer-format",
            Rule::UnsupportedBuild => "unsupported-build",
            Rule::Schema1 => "schema1",
            Rule::BadManifest => "bad-manifest",
            Rule::Attestation => "attestation",
            Rule::FetchError => "fetch-error",
            Rule::NotFound => "not-found",
            Rule::OsVersionNotInConfig => "os-version-not-in-config",
            Rule::LayerNotChecked => "layer-not-checked",
            Rule::ReleaseImageMissing => "release-image-missing",
            Rule::NoHostInScope => "no-host-in-scope",
            Rule::MirrorNotConfigured => "mirror-not-configured",
            Rule::MirrorTagIgnored => "mirror-tag-ignored",
            Rule::MirrorMissing => "mirror-missing",
            Rule::MirrorDigestDiffers => "mirror-digest-differs",
            Rule::MirrorChildMissing => "mirror-child-missing",
            Rule::MirrorWindowsDropped => "mirror-windows-dropped",
            Rule::ForeignLayerNotMirrored => "foreign-layer-not-mirrored",
            Rule::MirrorResolved => "mirror-resolved",
        }
    }

    /// How serious a finding of this rule is.
    pub fn severity(self) -> Severity {
        match self {
            Rule::ForeignLayer
            | Rule::LayerNotChecked
            | Rule::MirrorTagIgnored
            | Rule::NoHostInScope
            | Rule::OsVersionNotInConfig => Severity::Warning,
            Rule::UnsupportedBuild | Rule::Attestation | Rule::MirrorResolved => Severity::Info,
            _ => Severity::Error,
        }
    }

    /// How to fix it.
    pub fn hint(self) -> &'static str {
        match self {
            Rule::NotAnIndex => {
                "publish a manifest list with one entry per platform (imgcheck assemble)"
            }
            Rule::NoMatch => {
                "add an entry built for this host's Windows build/architecture, with os.version set from the image config"
            }
            Rule::OsVersionMissing => {
                "set os.version on the entry from the image config (buildah manifest add without --all, or imgcheck assemble); an image for HostProcess pods runs on every build: judge it with windows.isolation: hostprocess (policy openshift-hostprocess)"
            }
            Rule::PlatformMismatch => {
                "rebuild the list so each entry's platform is copied from the child's config"
            }
            Rule::WrongBuildSelected => {
                "fix the entry's os.version, or add an entry for this build, so the host selects an image it can run"
            }
            Rule::ChildMissing => {
                "push the missing manifest/blob to the same repository (copy with --all), then re-check"
            }
            Rule::DigestMismatch => {
                "the registry, mirror or layout serves corrupted content: re-push or re-mirror the image"
            }
            Rule::DuplicatePlatform => {
                "remove one of the entries; only the first one in containerd's order is ever pulled"
            }
            Rule::ForeignLayer => {
                "rebase on a base image without foreign layers, or mirror with a tool that copies them ('regctl image copy --include-external', 'crane copy --allow-nondistributable-artifacts'); skopeo copy leaves them out"
            }
            Rule::WindowsLayerFormat => {
                "build Windows images with Buildah >= 1.44 (or docker/buildkit on Windows) so layers use Files/ and Hives/"
            }
            Rule::UnsupportedBuild => {
                "drop the entry or add its build to the policy if such nodes exist"
            }
            Rule::Schema1 => {
                "re-push the image with a current tool: schema1 is obsolete and refused by containerd 2"
            }
            Rule::BadManifest => {
                "re-push the image; the content is not a valid OCI/Docker manifest"
            }
            Rule::Attestation => "none needed: attestation entries are metadata, never pulled",
            Rule::FetchError => {
                "check network access, credentials (--authfile) and --tls-verify, then re-run"
            }
            Rule::NotFound => {
                "check the reference for typos (registry, repository, tag); a private repository answers 404 to anonymous clients, so pass --creds/--authfile or log in with 'podman login'"
            }
            Rule::OsVersionNotInConfig => {
                "build the image with that os.version (buildah build --os-version, or FROM a base that has it), or drop os.version from the entry if the image runs on every build (HostProcess)"
            }
            Rule::LayerNotChecked => {
                "check the image the foreign layer comes from (its publisher's base image), or mirror it with its blobs so --deep can read it"
            }
            Rule::ReleaseImageMissing => {
                "check the component name against 'oc adm release info --pullspecs RELEASE'; a payload without it cannot serve the Windows nodes that need it"
            }
            Rule::NoHostInScope => {
                "check the pod's nodeSelector/affinity and the node list: no node imgcheck judged can run these pods, so only the image's content was checked"
            }
            Rule::MirrorNotConfigured => {
                "add the source (or a parent namespace) to an ImageDigestMirrorSet, or reference the image from the mirror directly"
            }
            Rule::MirrorTagIgnored => {
                "reference the image by digest (IDMS mirrors serve digest pulls only), or add an ImageTagMirrorSet"
            }
            Rule::MirrorMissing => {
                "mirror the image with 'skopeo copy --all --preserve-digests' (or oc-mirror) before releasing it"
            }
            Rule::MirrorDigestDiffers => {
                "re-mirror with 'skopeo copy --all --preserve-digests': filtering or re-serialising the list changes its digest and breaks digest references"
            }
            Rule::MirrorChildMissing => {
                "re-mirror with 'skopeo copy --all --preserve-digests' so every child manifest, config and layer is copied"
            }
            Rule::MirrorWindowsDropped => {
                "mirror all platforms: drop --filter-by-os / platform filters, use 'skopeo copy --all'"
            }
            Rule::ForeignLayerNotMirrored => {
                "copy foreign layers too (oc image mirror / regctl --include-external), or rebase on a base without foreign layers"
            }
            Rule::MirrorResolved => "none needed",
        }
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
        // Exhaustive: a new variant fails to compile here until it gets a place in ALL.
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
            Rule::MirrorNotConfigured => 20,
            Rule::MirrorTagIgnored => 21,
            Rule::MirrorMissing => 22,
            Rule::MirrorDigestDiffers => 23,
            Rule::MirrorChildMissing => 24,
            Rule::MirrorWindowsDropped => 25,
            Rule::ForeignLayerNotMirrored => 26,
            Rule::MirrorResolved => 27,
        };
        for (i, r) in Rule::ALL.iter().enumerate() {
            assert_eq!(position(*r), i, "{r:?}");
            assert_eq!(r.to_string(), r.id());
            assert_eq!(serde_json::to_value(r).unwrap(), r.id());
            assert_eq!(r.is_mirror(), i >= 20, "{r}");
        }
        let ids: BTreeSet<&str> = Rule::ALL.iter().map(|r| r.id()).collect();
        assert_eq!(ids.len(), Rule::ALL.len());
        assert_eq!(format!("[{:<10}]", Rule::Schema1), "[schema1   ]");
    }

    #[test]
    fn severities() {
        for r in Rule::ALL {
            let want = match r {
                Rule::ForeignLayer
                | Rule::LayerNotChecked
                | Rule::MirrorTagIgnored
                | Rule::NoHostInScope
                | Rule::OsVersionNotInConfig => Severity::Warning,
                Rule::UnsupportedBuild | Rule::Attestation | Rule::MirrorResolved => Severity::Info,
                _ => Severity::Error,
            };
            assert_eq!(r.severity(), want, "{r}");
        }
    }
}
