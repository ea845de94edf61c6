//! The HTTP clients of a run: one per registry host and scheme, each trusting the host's
//! TLS files (containers-certs.d(5) directories, or `--cert-dir`) and presenting its client
//! certificate.

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use http::Uri;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};

use super::connect::proxies_from_env;
use super::mutex::lock;
use super::options::ClientOptions;
use super::transport::Transport;
use super::wire::HttpClient;
use crate::auth::{CERTS_D_ROOTS, TlsFiles};
use crate::source::FetchError;

/// HTTP clients by (host, plain HTTP), built on first use.
pub(super) struct HttpClients {
    tls_verify: bool,
    cert_dir: Option<PathBuf>,
    connect_timeout: Duration,
    /// The environment's proxies (`HTTPS_PROXY`…), read once.
    proxies: Option<Arc<hyper_util::client::proxy::matcher::Matcher>>,
    /// By `host[:port]`: HTTPS clients, then plain-HTTP ones.
    built: Mutex<[HashMap<String, HttpClient>; 2]>,
    /// A transport the caller brought: every request goes through it.
    brought: OnceLock<Arc<dyn Transport>>,
}

impl HttpClients {
    pub(super) fn new(options: &ClientOptions) -> HttpClients {
        HttpClients {
            tls_verify: options.tls_verify,
            cert_dir: options.cert_dir.clone(),
            connect_timeout: options.request_timeout.min(Duration::from_secs(10)),
            proxies: proxies_from_env(),
            built: Mutex::new([HashMap::new(), HashMap::new()]),
            brought: OnceLock::new(),
        }
    }

    /// Sends every request through `transport` from now on (TLS files and proxies are then
    /// the transport's own business). Only the first transport brought counts.
    pub(super) fn bring(&self, transport: Arc<dyn Transport>) {
        let _ = self.brought.set(transport);
    }

    /// The HTTP client for `url`'s host (`host[:port]`), with its certs.d (or `--cert-dir`)
    /// CAs and client certificate. Built once per host and scheme: a plain-HTTP client gets
    /// no CA roots, as loading the system bundle was three quarters of the instructions of a
    /// single-reference `verify` against a plain-HTTP registry (docs/decisions.md).
    /// Redirects are never followed by the client: the request follows them itself.
    pub(super) fn for_url(&self, url: &Uri) -> Result<HttpClient, FetchError> {
        if let Some(transport) = self.brought.get() {
            return Ok(HttpClient::over(Arc::clone(transport), None));
        }
        let plain = url.scheme_str() == Some("http");
        let host = host_port(url);
        if let Some(c) = lock(&self.built)[usize::from(plain)].get(host.as_ref()) {
            return Ok(c.clone());
        }
        let host = host.as_ref();
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let config = if plain {
            ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .map_err(|e| no_tls(host, e))?
                .with_root_certificates(RootCertStore::empty())
                .with_no_client_auth()
        } else {
            self.tls_config(provider, host)?
        };
        let client = HttpClient::new(config, self.connect_timeout, self.proxies.clone());
        lock(&self.built)[usize::from(plain)].insert(host.to_string(), client.clone());
        Ok(client)
    }

    /// The TLS configuration for `host`: the system's roots and the certs.d (or
    /// `--cert-dir`) CAs (or no verification with `--tls-verify=false`), and the client
    /// certificate.
    fn tls_config(
        &self,
        provider: Arc<CryptoProvider>,
        host: &str,
    ) -> Result<ClientConfig, FetchError> {
        let files = tls_files(host, self.cert_dir.as_deref());
        let mut roots = Vec::new();
        for path in &files.ca_files {
            let pem = read_tls_file(path)?;
            let certs = CertificateDer::pem_slice_iter(&pem)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| bad_tls_file(path, "not PEM certificates", e))?;
            roots.extend(certs);
        }
        let builder = ClientConfig::builder_with_provider(Arc::clone(&provider))
            .with_safe_default_protocol_versions()
            .map_err(|e| no_tls(host, e))?
            .dangerous();
        let builder = if !self.tls_verify {
            builder.with_custom_certificate_verifier(Arc::new(NoVerifier(provider)))
        } else {
            let verifier = if roots.is_empty() {
                rustls_platform_verifier::Verifier::new(provider)
            } else {
                rustls_platform_verifier::Verifier::new_with_extra_roots(roots, provider)
            };
            builder
                .with_custom_certificate_verifier(Arc::new(verifier.map_err(|e| no_tls(host, e))?))
        };
        let Some((cert, key)) = files.client_pairs.first() else {
            return Ok(builder.with_no_client_auth());
        };
        let mut pem = read_tls_file(cert)?;
        pem.push(b'\n');
        pem.extend(read_tls_file(key)?);
        let not_pair = "not a PEM certificate and key";
        let chain = CertificateDer::pem_slice_iter(&pem)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| bad_tls_file(cert, not_pair, e))?;
        if chain.is_empty() {
            return Err(FetchError::bad_input(format!(
                "TLS file {}: {not_pair}: no certificate in it",
                cert.display()
            )));
        }
        let key =
            PrivateKeyDer::from_pem_slice(&pem).map_err(|e| bad_tls_file(cert, not_pair, e))?;
        builder
            .with_client_auth_cert(chain, key)
            .map_err(|e| bad_tls_file(cert, not_pair, e))
    }
}

/// The error of a TLS setup that failed for `host`.
fn no_tls(host: &str, e: rustls::Error) -> FetchError {
    FetchError::unavailable_by(format!("cannot set up HTTP for {host}"), e)
}

/// `--tls-verify=false`: any certificate chain and name is taken; the handshake's signature is
/// still checked against the certificate the server sent (it holds that certificate's key).
#[derive(Debug)]
struct NoVerifier(Arc<CryptoProvider>);

impl ServerCertVerifier for NoVerifier {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let algorithms = &self.0.signature_verification_algorithms;
        rustls::crypto::verify_tls12_signature(message, cert, dss, algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let algorithms = &self.0.signature_verification_algorithms;
        rustls::crypto::verify_tls13_signature(message, cert, dss, algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
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

/// `host[:port]` of a URL, as certs.d names directories: the port unless it is the
/// scheme's own (as `url::Url` leaves it out). Borrowed from the URL when it is written so.
pub(super) fn host_port(url: &Uri) -> Cow<'_, str> {
    let host = url.host().unwrap_or("");
    let default = match url.scheme_str() {
        Some("http") => Some(80),
        Some("https") => Some(443),
        _ => None,
    };
    let authority = url.authority().map_or("", |a| a.as_str());
    let port = url.port_u16();
    if !authority.contains('@') && (port.is_none() || port != default) {
        return Cow::Borrowed(authority);
    }
    match port {
        Some(p) if Some(p) != default => Cow::Owned(format!("{host}:{p}")),
        _ => Cow::Owned(host.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// TLS files that cannot be used are refused naming the file and what is wrong; good
    /// ones give a client.
    #[test]
    fn tls_files_are_read_or_refused_by_name() {
        let key_pair = rcgen::KeyPair::generate().unwrap();
        let params = rcgen::CertificateParams::new(vec!["h.example".to_string()]).unwrap();
        let cert = params.self_signed(&key_pair).unwrap().pem();
        let key = key_pair.serialize_pem();
        let garbled = "-----BEGIN CERTIFICATE-----\n!!!!\n-----END CERTIFICATE-----\n";
        // (files and their text, the error's text)
        type Row<'a> = (&'a [(&'a str, &'a str)], Option<&'a str>);
        let rows: [Row; 5] = [
            (&[("ca.crt", &cert)], None),
            (
                &[
                    ("ca.crt", &cert),
                    ("client.cert", &cert),
                    ("client.key", &key),
                ],
                None,
            ),
            (&[("ca.crt", garbled)], Some("ca.crt: not PEM certificates")),
            (
                &[("client.cert", "none"), ("client.key", &key)],
                Some("client.cert: not a PEM certificate and key: no certificate in it"),
            ),
            (
                &[("client.cert", &cert), ("client.key", "none")],
                Some("client.cert: not a PEM certificate and key"),
            ),
        ];
        for (files, want) in rows {
            let dir = tempfile::tempdir().unwrap();
            for (name, text) in files {
                std::fs::write(dir.path().join(name), text).unwrap();
            }
            let options = ClientOptions {
                cert_dir: Some(dir.path().to_path_buf()),
                ..ClientOptions::default()
            };
            let url: Uri = "https://h.example:5000/v2/".parse().unwrap();
            let got = HttpClients::new(&options).for_url(&url);
            match (got, want) {
                (Ok(_), None) => {}
                (Err(e), Some(want)) => assert!(e.to_string().contains(want), "{e}"),
                (Ok(_), Some(want)) => panic!("{files:?}: no error, wanted {want}"),
                (Err(e), None) => panic!("{files:?}: {e}"),
            }
        }
    }

    #[test]
    fn certs_d_directories_are_named_host_and_port() {
        let u = |s: &str| s.parse::<Uri>().unwrap();
        for (url, dir) in [
            ("https://h.example:5000/v2/", "h.example:5000"),
            ("https://h.example/v2/", "h.example"),
            ("https://h.example:443/v2/", "h.example"),
            ("http://h.example:443/v2/", "h.example:443"),
            ("http://h.example:80/v2/", "h.example"),
            ("https://u:p@h.example:5000/v2/", "h.example:5000"),
            ("https://[::1]:5000/v2/", "[::1]:5000"),
        ] {
            assert_eq!(host_port(&u(url)), dir, "{url}");
        }
    }
}
