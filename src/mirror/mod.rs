//! Disconnected mirroring (docs/mirroring.md): read the cluster's mirror configuration
//! ([`config`]), work out where a node pulls each reference from — a Linux node by
//! registries.conf ([`resolve`], [`plan`]), a Windows node by the hosts.toml files WMCO
//! renders or a directory holds ([`hosts`]), both in [`pull`] — and check the mirror holds the
//! source image byte for byte ([`check`]: the evidence is gathered by [`gather`] and judged by
//! [`judge`]), with the signatures that travelled with it ([`signatures`]); before mirroring
//! with oc-mirror, what it will copy of an ImageSetConfiguration entry ([`ocmirror`]).

use std::path::PathBuf;

pub mod check;
pub mod config;
pub mod gather;
pub mod hosts;
pub mod judge;
pub mod ocmirror;
pub mod plan;
pub mod pull;
pub mod resolve;
pub mod signatures;
#[cfg(test)]
mod testing;

use config::{MirrorConfig, MirrorConfigError};

/// Loads every mirror configuration file: registries.conf files (with drop-ins) first, then
/// IDMS/ITMS files, then ICSP files; each file may hold any of the three mirror-set kinds.
pub fn load(
    registries_conf: &[PathBuf],
    idms: &[PathBuf],
    icsp: &[PathBuf],
) -> Result<MirrorConfig, MirrorConfigError> {
    let mut config = MirrorConfig::default();
    for p in registries_conf {
        config.add_registries_conf_file(p)?;
    }
    for p in idms.iter().chain(icsp) {
        config.add_mirror_sets_file(p)?;
    }
    Ok(config)
}
