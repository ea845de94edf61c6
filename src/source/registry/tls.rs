//! The HTTP clients of a run: one per registry host and scheme, each trusting the host's
//! TLS files (containers-certs.d(5) directories, or `--cert-dir`) and presenting its client
//! certificate.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use reqwest::Url;

use super::mutex::lock;
use super::options::ClientOptions;
use crate::auth::{CERTS_D_ROOTS, TlsFiles};
use crate::source::FetchError;

/// HTTP clients by (host, plain HTTP), built on first use.
pub(super) struct HttpClients {
    tls_verify: bool,
    cert_dir: Option<PathBuf>,
    connect_timeout: Duration,
    built: Mutex<HashMap<(String, bool), reqwest::Client>>,
}

impl HttpClients {
    pub(super) fn new(options: &ClientOptions) -> HttpClients {
        HttpClients {
            tls_verify: options.tls_verify,
            cert_dir: options.cert_dir.clone(),
            connect_timeout: options.request_timeout.min(Duration::from_secs(10)),
            built: Mutex::new(HashMap::new()),
        }
    }

    /// The HTTP client for `url`'s host (`host[:port]`), with its certs.d (or `--cert-dir`)
    /// CAs and client certificate. Built once per host and scheme: a plain-HTTP client gets
    /// no CA roots, as loading the system bundle was three quarters of the instructions of a
    /// single-reference `verify` against a plain-HTTP registry (docs/decisions.md).
    /// Redirects are never followed by the client: the request follows them itself.
    pub(super) fn for_url(&self, url: &Url) -> Result<reqwest::Client, FetchError> {
        let key = (host_port(url), url.scheme() == "http");
        if let Some(c) = lock(&self.built).get(&key) {
            return Ok(c.clone());
        }
        let (host, plain) = &key;
        let builder = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(self.connect_timeout)
            .user_agent(concat!("imgcheck/", env!("CARGO_PKG_VERSION")));
        let builder = if *plain {
            builder.tls_certs_only(Vec::new())
        } else {
            self.with_tls_files(builder, host)?
        };
        let client = builder
            .build()
            .map_err(|e| FetchError::unavailable_by(format!("cannot set up HTTP for {host}"), e))?;
        lock(&self.built).insert(key, client.clone());
        Ok(client)
    }

    /// `builder` with the certs.d (or `--cert-dir`) CAs and client certificate for `host`.
    fn with_tls_files(
        &self,
        mut builder: reqwest::ClientBuilder,
        host: &str,
    ) -> Result<reqwest::ClientBuilder, FetchError> {
        let files = tls_files(host, self.cert_dir.as_deref());
        builder = builder.tls_danger_accept_invalid_certs(!self.tls_verify);
        for path in &files.ca_files {
            let pem = read_tls_file(path)?;
            let certs = reqwest::Certificate::from_pem_bundle(&pem)
                .map_err(|e| bad_tls_file(path, "not PEM certificates", e))?;
            for c in certs {
                builder = builder.add_root_certificate(c);
            }
        }
        if let Some((cert, key)) = files.client_pairs.first() {
            let mut pem = read_tls_file(cert)?;
            pem.push(b'\n');
            pem.extend(read_tls_file(key)?);
            let identity = reqwest::Identity::from_pem(&pem)
                .map_err(|e| bad_tls_file(cert, "not a PEM certificate and key", e))?;
            builder = builder.identity(identity);
        }
        Ok(builder)
    }
}

/// The TLS files for `host`: `--cert-dir` when given, else the system certs.d roots.
pub(super) fn tls_files(host: &str, cert_dir: Option<&Path>) -> TlsFiles {
    let roots: Vec<PathBuf> = CERTS_D_ROOTS.iter().map(PathBuf::from).collect();
    TlsFiles::find(host, cert_dir, &roots)
}

fn read_tls_file(path: &Path) -> Result<Vec<u8>, FetchError> {
    std::fs::read(path)
        .map_err(|e| FetchError::bad_input_by(format!("TLS file {}", path.display()), e))
}

fn bad_tls_file(
    path: &Path,
    why: &str,
    e: impl std::error::Error + Send + Sync + 'static,
) -> FetchError {
    FetchError::bad_input_by(format!("TLS file {}: {why}", path.display()), e)
}

/// `host[:port]` of a URL, as certs.d names directories.
pub(super) fn host_port(url: &Url) -> String {
    let host = url.host_str().unwrap_or("");
    match url.port() {
        Some(p) => format!("{host}:{p}"),
        None => host.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn certs_d_directories_are_named_host_and_port() {
        let u = |s: &str| Url::parse(s).unwrap();
        assert_eq!(
            host_port(&u("https://h.example:5000/v2/")),
            "h.example:5000"
        );
        assert_eq!(host_port(&u("https://h.example/v2/")), "h.example");
    }
}
