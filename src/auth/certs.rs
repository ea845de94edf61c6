//! TLS material per registry host (containers-certs.d(5)): extra CAs and client
//! certificates under `/etc/containers/certs.d/HOST[:PORT]/`, or one `--cert-dir`.

use std::path::{Path, PathBuf};

/// TLS material for one registry host (containers-certs.d(5)).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsFiles {
    /// Extra CA certificates (`*.crt`), trusted in addition to the system roots.
    pub ca_files: Vec<PathBuf>,
    /// Client certificate and key pairs (`NAME.cert` with `NAME.key`).
    pub client_pairs: Vec<(PathBuf, PathBuf)>,
}

/// The system-wide certs.d roots, searched in this order.
pub const CERTS_D_ROOTS: [&str; 2] = ["/etc/containers/certs.d", "/etc/docker/certs.d"];

impl TlsFiles {
    /// TLS files for `host` (`host[:port]`): `cert_dir` alone when given (`--cert-dir`), else
    /// `<root>/<host>` under each of `roots` (normally [`CERTS_D_ROOTS`]).
    pub fn find(host: &str, cert_dir: Option<&Path>, roots: &[PathBuf]) -> TlsFiles {
        let dirs: Vec<PathBuf> = match cert_dir {
            Some(d) => vec![d.to_path_buf()],
            None => roots
                .iter()
                .filter(|_| !host.is_empty() && !host.contains(['/', '\\']) && host != "..")
                .map(|r| r.join(host))
                .collect(),
        };
        let mut files = TlsFiles::default();
        for dir in dirs {
            let Ok(read) = std::fs::read_dir(&dir) else {
                continue;
            };
            let mut names: Vec<PathBuf> = read.flatten().map(|e| e.path()).collect();
            names.sort();
            for path in names {
                match path.extension().and_then(|e| e.to_str()) {
                    Some("crt") => files.ca_files.push(path),
                    Some("cert") => {
                        let key = path.with_extension("key");
                        if key.is_file() {
                            files.client_pairs.push((path, key));
                        }
                    }
                    _ => {}
                }
            }
        }
        files
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn certs_d_layout() {
        let dir = tempfile::tempdir().unwrap();
        let root1 = dir.path().join("containers");
        let root2 = dir.path().join("docker");
        let host = root1.join("reg.example:5000");
        std::fs::create_dir_all(&host).unwrap();
        std::fs::create_dir_all(root2.join("reg.example:5000")).unwrap();
        for f in [
            "ca.crt",
            "client.cert",
            "client.key",
            "lonely.cert",
            "notes.txt",
        ] {
            std::fs::write(host.join(f), "x").unwrap();
        }
        std::fs::write(root2.join("reg.example:5000/other.crt"), "x").unwrap();
        let roots = [root1.clone(), root2.clone()];
        let files = TlsFiles::find("reg.example:5000", None, &roots);
        assert_eq!(
            files.ca_files,
            vec![
                host.join("ca.crt"),
                root2.join("reg.example:5000/other.crt")
            ]
        );
        assert_eq!(
            files.client_pairs,
            vec![(host.join("client.cert"), host.join("client.key"))]
        );
        assert_eq!(
            TlsFiles::find("reg.example", None, &roots),
            TlsFiles::default()
        );
        assert_eq!(TlsFiles::find("../x", None, &roots), TlsFiles::default());
        // --cert-dir replaces the system directories.
        let only = TlsFiles::find(
            "reg.example:5000",
            Some(&root2.join("reg.example:5000")),
            &roots,
        );
        assert_eq!(
            only.ca_files,
            vec![root2.join("reg.example:5000/other.crt")]
        );
    }
}
