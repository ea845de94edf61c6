//! Wording the judges share.

use crate::platform::{Platform, build_name};

/// Windows build, name and revision text for messages.
pub(super) fn build_text(p: &Platform) -> String {
    match p.windows_version() {
        Some(v) => match build_name(v.build) {
            Some(n) => format!("{} ({n})", p.os_version.clone().unwrap_or_default()),
            None => p.os_version.clone().unwrap_or_default(),
        },
        None => "no os.version".to_string(),
    }
}
