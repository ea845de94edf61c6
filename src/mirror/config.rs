//! Mirror configuration as a cluster node reads it (docs/mirroring.md).
//!
//! Three inputs end up in one [`MirrorConfig`], the shape of containers-registries.conf(5)
//! v2 after the Machine Config Operator has rendered the cluster objects into it:
//!
//! - `ImageDigestMirrorSet` / `ImageTagMirrorSet` (`config.openshift.io/v1`) and
//!   `ImageContentSourcePolicy` (`operator.openshift.io/v1alpha1`), several YAML documents per
//!   file (and `kind: List`), as `oc-mirror` writes them. Each `source` becomes a registry
//!   entry whose prefix is the source; IDMS and ICSP mirrors serve digest pulls only, ITMS
//!   mirrors tag pulls only; `mirrorSourcePolicy: NeverContactSource` blocks the source.
//!   Entries for the same source are merged as the Machine Config Operator merges them
//!   (openshift/runtime-utils, `merge.rs`).
//! - `registries.conf` v2 (TOML) with its `<file>.d/*.conf` drop-ins, read in name order; a
//!   drop-in entry replaces an earlier entry with the same prefix, and within one file the
//!   first entry of a prefix wins (containers/image `sysregistriesv2`).
//!
//! Registries files are applied first, then the mirror sets, whatever the order of the flags.
//! Each input format is read in its own file (`sets.rs`, `registries_conf.rs`) into the entries
//! of `model.rs`; scopes are checked by [`validate_scope`]; `file.rs` reads a file within its
//! limits and says what is wrong with one; `merge.rs` merges the mirror sets into registry
//! entries. This file keeps the inputs in a [`MirrorConfig`]; the files below never import it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

mod file;
mod merge;
mod model;
mod registries_conf;
mod scope;
mod sets;

pub use file::{ConfigProblem, MirrorConfigError};
use file::{MAX_DROP_INS, error, read};
pub use model::{Mirror, MirrorSet, MirrorSetKind, PullFrom, Registry, SourcePolicy};
pub use scope::{ScopeError, validate_scope};

/// Every registry entry of the inputs, one per prefix, sorted by prefix; and every mirror-set
/// entry as written, in input order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MirrorConfig {
    /// The entries of the registries.conf files, by prefix.
    conf: BTreeMap<String, Registry>,
    /// Every mirror-set entry, in input order.
    sets: Vec<MirrorSet>,
    /// `conf` with `sets` merged in (`merge::registries`), kept up to date by every `add_*`.
    registries: BTreeMap<String, Registry>,
}

impl MirrorConfig {
    /// True when no registry entry was configured.
    pub fn is_empty(&self) -> bool {
        self.registries.is_empty()
    }

    /// Every registry entry, sorted by prefix.
    pub fn registries(&self) -> impl Iterator<Item = &Registry> {
        self.registries.values()
    }

    /// Every IDMS, ITMS and ICSP entry read, as written, in input order.
    pub fn mirror_sets(&self) -> &[MirrorSet] {
        &self.sets
    }

    /// Loads mirror-set YAML (IDMS, ITMS, ICSP; several documents) and merges it in.
    pub fn add_mirror_sets_file(&mut self, path: &Path) -> Result<(), MirrorConfigError> {
        let text = read(path)?;
        self.add_mirror_sets(path, &text)
    }

    /// Merges mirror-set YAML text read from `path`. An object without entries is a valid
    /// configuration without mirrors; a text without any mirror-set object is refused.
    pub fn add_mirror_sets(&mut self, path: &Path, text: &str) -> Result<(), MirrorConfigError> {
        let collected = sets::collect(path, text)?;
        if collected.objects == 0 {
            let none =
                "no ImageDigestMirrorSet, ImageTagMirrorSet or ImageContentSourcePolicy found";
            return Err(error(path, None, ConfigProblem::Invalid(none.into())));
        }
        self.sets.extend(collected.entries);
        self.registries = merge::registries(&self.conf, &self.sets);
        Ok(())
    }

    /// Loads a registries.conf v2 file and its `<file>.d/*.conf` drop-ins (name order).
    pub fn add_registries_conf_file(&mut self, path: &Path) -> Result<(), MirrorConfigError> {
        let text = read(path)?;
        self.add_registries_conf(path, &text)?;
        let mut dir = path.as_os_str().to_owned();
        dir.push(".d");
        let dir = PathBuf::from(dir);
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(error(&dir, None, ConfigProblem::Read(Arc::new(e)))),
        };
        let mut drop_ins: Vec<PathBuf> = Vec::new();
        for (n, entry) in entries.enumerate() {
            if n >= MAX_DROP_INS {
                let problem = ConfigProblem::TooManyDropIns(MAX_DROP_INS);
                return Err(error(&dir, None, problem));
            }
            let entry = entry.map_err(|e| error(&dir, None, ConfigProblem::Read(Arc::new(e))))?;
            let p = entry.path();
            // containers/image `dropInConfigs` (filepath.WalkDir) takes every `*.conf` entry
            // that is not a directory — links included — and `tryUpdatingCache` reads each.
            let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
            if p.extension().is_some_and(|x| x == "conf") && !is_dir && drop_in(&p)? {
                drop_ins.push(p);
            }
        }
        drop_ins.sort();
        for p in drop_ins {
            let text = read(&p)?;
            self.add_registries_conf(&p, &text)?;
        }
        Ok(())
    }

    /// Merges registries.conf v2 text read from `path`: its entries replace earlier entries
    /// with the same prefix (as a drop-in does).
    pub fn add_registries_conf(
        &mut self,
        path: &Path,
        text: &str,
    ) -> Result<(), MirrorConfigError> {
        let entries = registries_conf::parse(path, text)?;
        self.conf.extend(entries);
        self.registries = merge::registries(&self.conf, &self.sets);
        Ok(())
    }
}

/// Is the drop-in `path` read? Not when it does not exist (a dangling link:
/// `tryUpdatingCache` skips a drop-in that `fs.ErrNotExist` stops); refused, before it is
/// opened, when it is not a regular file (a FIFO blocks the open, a device never ends, a
/// directory fails CRI-O's every pull).
fn drop_in(path: &Path) -> Result<bool, MirrorConfigError> {
    match std::fs::metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(error(path, None, ConfigProblem::Read(Arc::new(e)))),
        Ok(m) if !m.is_file() => Err(error(
            path,
            None,
            ConfigProblem::Invalid(format!(
                "{}, not a regular file: CRI-O reads every *.conf drop-in that is not a \
                 directory (containers/image sysregistriesv2 dropInConfigs) and cannot load it",
                crate::input::file_kind(&m)
            )),
        )),
        Ok(_) => Ok(true),
    }
}

crate::error::input_errors!(MirrorConfigError);

#[cfg(test)]
mod tests;
