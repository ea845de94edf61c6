//! The hosts.toml files the Windows Machine Config Operator writes for a Windows node from the
//! cluster's ImageDigestMirrorSets and ImageTagMirrorSets (openshift/windows-machine-config-operator
//! `pkg/registries/registries.go`, the rendering with `override_path`; docs/mirroring.md says
//! which WMCO versions): ImageContentSourcePolicy and registries.conf are not read.
//!
//! - every entry becomes a mirror set keyed by the source's registry **host**
//!   (`newMirrorSet`, `extractRegistryHostname`): mirrors of `quay.io/a/b` serve all of `quay.io`;
//! - each mirror drops the path suffix it shares with the source (`newMirror`,
//!   `extractMirrorURL`, stopping at the first difference); a mirror equal to its source keeps
//!   its host only;
//! - every IDMS entry is taken before every ITMS entry, whatever the order of the files
//!   (`getMergedMirrorSets`);
//! - sets of one host are merged, a mirror listed twice kept once (tag resolution wins)
//!   (`mergeMirrorSets`, `mergeMirrors`); the **first** set's `mirrorSourcePolicy` is kept
//!   unless it is the string `AllowContactingSource`, when the next set's replaces it — an
//!   unset policy (Go's empty string) is therefore kept, and a later `NeverContactSource` of
//!   the same host does nothing (`mergeMirrorSets`); mirrors are sorted alphabetically
//!   (`sortMirrorSets`), not kept in spec order;
//! - each mirror is written `[host."https://HOST/v2/PATH"]` with `override_path = true`,
//!   capabilities `["pull"]` (IDMS) or `["pull", "resolve"]` (ITMS); `server` is
//!   `https://SOURCE-HOST/v2`, or the first mirror under `NeverContactSource`, with
//!   `override_path = true` and no capabilities (so all of them) (`generateConfig`);
//! - the file goes to the folder named after the source host (`GenerateConfigFiles`), which
//!   for a source with a port is `host:port`.

use std::collections::BTreeMap;
use std::collections::btree_map::Entry;
use std::path::PathBuf;

use super::model::{Capabilities, ConfiguredBy, HostsConfig, HostsFile, RegistryHost};
use crate::mirror::config::{
    ConfigProblem, MirrorConfigError, MirrorSet, MirrorSetKind, SourcePolicy,
};

/// One merged mirror: its truncated location and whether it resolves tags.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Truncated {
    location: String,
    resolve_tags: bool,
}

/// The mirror sets of one source registry host, merged: mirrors by truncated location (so
/// sorted), the policy `mergeMirrorSets` keeps, and where the entries were configured.
#[derive(Debug)]
struct Merged {
    mirrors: BTreeMap<String, Truncated>,
    policy: SourcePolicy,
    origins: Vec<String>,
}

impl Merged {
    /// The first set of a host: its policy as written.
    fn first(set: &MirrorSet) -> Merged {
        Merged {
            mirrors: BTreeMap::new(),
            policy: set.policy,
            origins: Vec::new(),
        }
    }

    /// A later set of the same host: the policy is replaced only when the kept one is
    /// `AllowContactingSource` itself (`mergeMirrorSets`).
    fn then(&mut self, set: &MirrorSet) {
        if self.policy == SourcePolicy::AllowContactingSource {
            self.policy = set.policy;
        }
    }

    /// Adds the set's truncated mirrors (`mergeMirrors`: once each, tag resolution winning).
    fn add(&mut self, set: &MirrorSet) -> Result<(), MirrorConfigError> {
        if !self.origins.contains(&set.origin) {
            self.origins.push(set.origin.clone());
        }
        let resolve_tags = set.kind == MirrorSetKind::Itms;
        for m in &set.mirrors {
            let location = truncate(&set.source, m);
            if location.is_empty() {
                return Err(empty_mirror(set, m));
            }
            let slot = self.mirrors.entry(location.clone()).or_insert(Truncated {
                location,
                resolve_tags,
            });
            slot.resolve_tags |= resolve_tags;
        }
        Ok(())
    }
}

/// The registry host of a location (`host[:port]`, everything before the first `/`).
pub fn registry_host(location: &str) -> &str {
    location.split('/').next().unwrap_or(location)
}

/// `mirror` with the path suffix it shares with `source` dropped, segment by segment from the
/// end, stopping at the first difference (`extractMirrorURL`); a mirror equal to its source
/// keeps its host (`newMirror`).
pub fn truncate(source: &str, mirror: &str) -> String {
    if source == mirror {
        return registry_host(mirror).to_string();
    }
    let source: Vec<&str> = source.split('/').collect();
    let mut kept: Vec<&str> = mirror.split('/').collect();
    for s in source.iter().rev() {
        if kept.last() != Some(s) {
            break;
        }
        kept.pop();
    }
    kept.join("/")
}

/// `https://HOST/v2[/PATH]` with `override_path`, as `generateConfig` writes a location.
fn host_entry(location: &str, capabilities: Capabilities) -> RegistryHost {
    let host = registry_host(location);
    let rest = location[host.len()..].trim_start_matches('/');
    RegistryHost {
        scheme: "https".into(),
        host: host.into(),
        path: if rest.is_empty() {
            "/v2".into()
        } else {
            format!("/v2/{rest}")
        },
        capabilities,
        override_path: true,
    }
}

/// A mirror that truncates to nothing (the source ends with the whole mirror location).
fn empty_mirror(set: &MirrorSet, mirror: &str) -> MirrorConfigError {
    let at = set.origin.split(": ").next().unwrap_or(&set.origin);
    MirrorConfigError {
        path: PathBuf::from(at),
        line: None,
        problem: Box::new(ConfigProblem::Invalid(format!(
            "{}: mirror '{mirror}' of source '{}': WMCO drops the path the mirror shares with the \
             source and keeps nothing here, so Windows nodes would get a host entry without a host",
            set.at, set.source
        ))),
    }
}

/// The hosts.toml tree WMCO writes for `sets`: the IDMS entries, then the ITMS entries (ICSP
/// entries are skipped: WMCO does not read them). Refuses a mirror that truncates to nothing,
/// naming the file, entry and field.
pub fn render(sets: &[MirrorSet]) -> Result<HostsConfig, MirrorConfigError> {
    let of = |kind| sets.iter().filter(move |s| s.kind == kind);
    let mut merged: BTreeMap<String, Merged> = BTreeMap::new();
    for set in of(MirrorSetKind::Idms).chain(of(MirrorSetKind::Itms)) {
        let host = registry_host(&set.source).to_string();
        let entry = match merged.entry(host) {
            Entry::Vacant(v) => v.insert(Merged::first(set)),
            Entry::Occupied(o) => {
                let m = o.into_mut();
                m.then(set);
                m
            }
        };
        entry.add(set)?;
    }
    let mut config = HostsConfig::new(ConfiguredBy::Wmco);
    for (source, set) in merged {
        // The BTreeMap keeps the mirrors sorted by location: `sortMirrorSets`.
        let (never_contact, origins) = (set.policy.never_contact(), set.origins);
        let mirrors: Vec<Truncated> = set.mirrors.into_values().collect();
        let Some(first) = mirrors.first() else {
            continue; // `generateConfig` writes nothing for a set without mirrors
        };
        let server = match never_contact {
            true => host_entry(&first.location, Capabilities::ALL),
            false => host_entry(&source, Capabilities::ALL),
        };
        let hosts = mirrors
            .iter()
            .map(|m| {
                let caps = match m.resolve_tags {
                    true => Capabilities::PULL_RESOLVE,
                    false => Capabilities::PULL,
                };
                host_entry(&m.location, caps)
            })
            .collect();
        if source.contains(':') {
            config.unusable.insert(
                source.clone(),
                format!(
                    "WMCO writes the hosts.toml of a source with a port to the folder '{source}', a name \
                     Windows does not allow (':' is reserved) and not the '{}' folder containerd looks up first",
                    source.replacen(':', "_", 1) + "_"
                ),
            );
        }
        let origin = format!("WMCO rendering of {}", origins.join(", "));
        config.files.insert(
            source,
            HostsFile {
                origin,
                hosts,
                server: Some(server),
                // generateConfig writes a [host."…"] entry per mirror, and a set has one.
                host_table: true,
            },
        );
    }
    Ok(config)
}
