//! HTTPS on the main listener: rustls (ring), HTTP/2 and HTTP/1.1 by ALPN,
//! the certificate and key read from files and re-read when they change
//! (checked every `tls.reload_check_secs`) or on SIGHUP. A renewal that
//! does not parse is logged and the current certificate stays.

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::{Duration, SystemTime};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;

use crate::config::TlsSection;

/// A connection accepted over TLS.
pub(crate) type TlsStream =
    actix_tls::accept::rustls_0_23::TlsStream<actix_web::rt::net::TcpStream>;

/// Serves whatever certificate was loaded last.
#[derive(Debug)]
pub struct ReloadingCert {
    cert_file: PathBuf,
    key_file: PathBuf,
    current: RwLock<Arc<CertifiedKey>>,
    stamp: RwLock<(Option<SystemTime>, Option<SystemTime>)>,
}

impl ResolvesServerCert for ReloadingCert {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(
            self.current
                .read()
                .unwrap_or_else(|p| p.into_inner())
                .clone(),
        )
    }
}

fn modified(p: &Path) -> Option<SystemTime> {
    std::fs::metadata(p).and_then(|m| m.modified()).ok()
}

fn load(cert_file: &Path, key_file: &Path) -> Result<CertifiedKey, String> {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert_file)
        .map_err(|e| format!("tls.cert_file {}: {e}", cert_file.display()))?
        .collect::<Result<_, _>>()
        .map_err(|e| format!("tls.cert_file {}: {e}", cert_file.display()))?;
    if certs.is_empty() {
        return Err(format!(
            "tls.cert_file {}: no PEM certificate in it",
            cert_file.display()
        ));
    }
    let key = PrivateKeyDer::from_pem_file(key_file)
        .map_err(|e| format!("tls.key_file {}: {e}", key_file.display()))?;
    let signing = rustls::crypto::ring::sign::any_supported_type(&key)
        .map_err(|e| format!("tls.key_file {}: {e}", key_file.display()))?;
    Ok(CertifiedKey::new(certs, signing))
}

impl ReloadingCert {
    pub fn new(tls: &TlsSection) -> Result<Arc<Self>, String> {
        let (cert_file, key_file) = (PathBuf::from(&tls.cert_file), PathBuf::from(&tls.key_file));
        let key = load(&cert_file, &key_file)?;
        Ok(Arc::new(Self {
            stamp: RwLock::new((modified(&cert_file), modified(&key_file))),
            current: RwLock::new(Arc::new(key)),
            cert_file,
            key_file,
        }))
    }

    /// Loads the files again; `force` even when their times did not change.
    pub fn reload(&self, force: bool) {
        let stamp = (modified(&self.cert_file), modified(&self.key_file));
        if !force && *self.stamp.read().unwrap_or_else(|p| p.into_inner()) == stamp {
            return;
        }
        match load(&self.cert_file, &self.key_file) {
            Ok(key) => {
                *self.current.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(key);
                *self.stamp.write().unwrap_or_else(|p| p.into_inner()) = stamp;
                tracing::info!(cert = %self.cert_file.display(), "TLS certificate (re)loaded");
            }
            Err(e) => tracing::error!("TLS certificate not reloaded, keeping the current one: {e}"),
        }
    }

    /// Checks the files every `every`, and reloads on SIGHUP.
    pub fn watch(self: &Arc<Self>, every: Duration) {
        let this = self.clone();
        actix_rt::spawn(async move {
            let mut tick = tokio::time::interval(every.max(Duration::from_secs(1)));
            tick.tick().await;
            #[cfg(unix)]
            let mut hup =
                tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()).ok();
            loop {
                #[cfg(unix)]
                {
                    let hup_recv = async {
                        match hup.as_mut() {
                            Some(h) => h.recv().await,
                            None => std::future::pending().await,
                        }
                    };
                    tokio::select! {
                        _ = tick.tick() => this.reload(false),
                        _ = hup_recv => this.reload(true),
                    }
                }
                #[cfg(not(unix))]
                {
                    tick.tick().await;
                    this.reload(false);
                }
            }
        });
    }
}

/// The rustls server configuration (ALPN is added by actix-web: h2, http/1.1).
pub fn server_config(cert: Arc<ReloadingCert>) -> Result<rustls::ServerConfig, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    Ok(rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_no_client_auth()
        .with_cert_resolver(cert))
}
