//! Registry writes ([`crate::push`]) still go through oci-client: its configuration agrees
//! with the read path on each registry's scheme and extra CAs (client certificates are not
//! supported there), and it uses the run's credentials.

use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use oci_client::client::{Certificate, CertificateEncoding, ClientConfig, ClientProtocol};
use oci_client::secrets::RegistryAuth;

use super::tls::tls_files;
use super::{ClientOptions, RegistryClient, lock};
use crate::reference::RegistryRef;

/// The oci-client for writes, built on first use (building it loads the system CA bundle
/// again).
#[derive(Default)]
pub(super) struct Writes {
    client: OnceLock<oci_client::Client>,
    /// oci-client's configuration, fixed once the plain-HTTP probes are done; taken when
    /// the client is built (`ClientConfig` is not `Clone`).
    config: Mutex<Option<ClientConfig>>,
}

impl Writes {
    /// Writes to `registries` go over plain HTTP to the `plain_http` ones, trusting the
    /// same extra CAs as reads.
    pub(super) fn configure(
        &self,
        options: &ClientOptions,
        registries: &[RegistryRef],
        plain_http: Vec<String>,
    ) {
        let mut extra_roots = Vec::new();
        for r in registries {
            for ca in tls_files(&r.registry, options.cert_dir.as_deref()).ca_files {
                if let Ok(data) = std::fs::read(&ca) {
                    extra_roots.push(Certificate {
                        encoding: CertificateEncoding::Pem,
                        data,
                    });
                }
            }
        }
        *lock(&self.config) = Some(ClientConfig {
            protocol: ClientProtocol::HttpsExcept(plain_http),
            extra_root_certificates: extra_roots,
            ..oci_config(options)
        });
    }
}

impl RegistryClient {
    /// The credentials this run uses for `reference` (anonymous when none are stored), for
    /// oci-client writes.
    pub fn auth_for(&self, reference: &RegistryRef) -> RegistryAuth {
        match self.auth.lookup(reference) {
            Ok(Some(c)) => RegistryAuth::Basic(c.username, c.password),
            _ => RegistryAuth::Anonymous,
        }
    }

    /// The underlying oci-client, for registry writes ([`crate::push`]).
    pub fn oci(&self) -> &oci_client::Client {
        self.writes.client.get_or_init(|| {
            let config = lock(&self.writes.config).take();
            oci_client::Client::new(config.unwrap_or_else(|| oci_config(&self.options)))
        })
    }
}

/// oci-client's configuration for writes (scheme per registry set by the caller).
fn oci_config(options: &ClientOptions) -> ClientConfig {
    ClientConfig {
        protocol: ClientProtocol::HttpsExcept(Vec::new()),
        accept_invalid_certificates: !options.tls_verify,
        platform_resolver: None,
        connect_timeout: Some(Duration::from_secs(10)),
        read_timeout: Some(Duration::from_secs(60)),
        user_agent: concat!("imgcheck/", env!("CARGO_PKG_VERSION")),
        ..ClientConfig::default()
    }
}
