//! Where the paths a Windows stage names land (pure): a `COPY`/`ADD` destination or a
//! `WORKDIR` as Docker on Windows reads it (`C:\csi\`, `c:/csi/`, `\csi\` and `/csi/` are the
//! same directory; a relative path joins the WORKDIR; only drive `C:` exists in a container),
//! written as the absolute Linux path the `FROM scratch` files stage uses (`/csi/`), whose
//! files the layer writer puts under `Files/` (`Files/csi/…`), and as the Windows path the
//! config's `WorkingDir` holds (`C:\csi`). Docker's rule: moby `normalizeWorkdirWindows`
//! (docs/buildah.md, "Composed stage: paths").

/// Why a path cannot be placed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    /// A drive other than `C:`.
    #[error("'{0}' is on drive {1}:, and a Windows container has only C:")]
    Drive(String, char),
    /// `C:name`: relative to the drive's current directory.
    #[error("'{0}' is relative to a drive's current directory (write C:\\{1})")]
    DriveRelative(String, String),
    /// Relative, and the directory it is relative to is the base's WORKDIR, not known here.
    #[error("'{0}' is relative, and the stage sets no WORKDIR before it (the base's decides)")]
    Relative(String),
}

/// `path` as an absolute Linux-style path under the image root: `/` separators, no drive, `.`
/// and `..` resolved (never above the root), a trailing `/` kept (a directory destination).
/// `cwd` is the current WORKDIR in that form; `None` when it is the base's.
pub fn to_root(path: &str, cwd: Option<&str>) -> Result<String, PathError> {
    let slashed = path.replace('\\', "/");
    let (rest, drive) = match slashed.as_bytes() {
        [d, b':', ..] if d.is_ascii_alphabetic() => (&slashed[2..], Some(char::from(*d))),
        _ => (slashed.as_str(), None),
    };
    if let Some(d) = drive.filter(|d| !d.eq_ignore_ascii_case(&'c')) {
        return Err(PathError::Drive(path.to_string(), d.to_ascii_uppercase()));
    }
    let joined = if rest.starts_with('/') {
        rest.to_string()
    } else if drive.is_some() {
        return Err(PathError::DriveRelative(path.to_string(), rest.to_string()));
    } else {
        let cwd = cwd.ok_or_else(|| PathError::Relative(path.to_string()))?;
        format!("{}/{rest}", cwd.trim_end_matches('/'))
    };
    let mut parts: Vec<&str> = Vec::new();
    for part in joined.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            p => parts.push(p),
        }
    }
    let directory = joined.ends_with('/') || joined.ends_with("/.") || joined.ends_with("/..");
    let mut out = format!("/{}", parts.join("/"));
    if directory && !out.ends_with('/') {
        out.push('/');
    }
    Ok(out)
}

/// An absolute path of [`to_root`] as Windows writes it: `C:\csi` (`C:\` for the root).
pub fn to_windows(root: &str) -> String {
    let trimmed = root.trim_matches('/');
    format!("C:\\{}", trimmed.replace('/', "\\"))
}

#[cfg(test)]
mod tests;
