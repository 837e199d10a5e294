//! Automatic certificates over ACME (RFC 8555) for the host users reach Ferrozone at.
//!
//! The CA validates control of the host with the TLS-ALPN-01 challenge (RFC 8737): it
//! connects to port 443 offering ALPN `acme-tls/1`, and the HTTPS server answers with a
//! challenge certificate from the same resolver that serves the real certificate. So ACME
//! needs no port besides the HTTPS one and no change to the web routes.
//!
//! [`Acme::start`] loads the stored certificate (served at once, without contacting the CA)
//! and returns the task that orders the first certificate and renews it (docs/operations.md,
//! "Automatic certificates (ACME)").

mod cache;
mod certificate;
mod order;
mod renewal;
mod resolver;

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::time::SystemTime;

use rustls::server::ResolvesServerCert;
use tokio::sync::watch;

pub use resolver::ACME_TLS_ALPN;

/// Let's Encrypt's production directory.
pub const LETS_ENCRYPT_DIRECTORY: &str = "https://acme-v02.api.letsencrypt.org/directory";

#[derive(Debug, Clone)]
pub struct Settings {
    /// The DNS name to certify.
    pub host: String,
    /// The ACME server's directory URL.
    pub directory_url: String,
    /// Where the CA sends expiry notices, if it still does.
    pub contact_email: Option<String>,
    /// A PEM root certificate to trust for the ACME server's own HTTPS, instead of the
    /// system's roots: for a private CA.
    pub ca_file: Option<PathBuf>,
    /// Where the account and the certificate are kept (`<data dir>/acme`).
    pub cache_dir: PathBuf,
}

/// What the renewal task is doing, for logs, health and tests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    /// The task has not run yet.
    Starting,
    /// A certificate is served; the next order is due at `renew_at`.
    Waiting { not_after: SystemTime, renew_at: SystemTime },
    /// An order is in progress.
    Ordering,
    /// The last order failed with `error`; the next try is at `at`.
    Retrying { at: SystemTime, error: String },
}

pub type Task = Pin<Box<dyn Future<Output = anyhow::Result<()>> + Send>>;

pub struct Acme {
    /// For the HTTPS server, which must also offer ALPN [`ACME_TLS_ALPN`].
    pub resolver: Arc<dyn ResolvesServerCert>,
    /// Orders and renews the certificate, for ever: run it under the supervisor.
    pub task: Task,
    pub status: watch::Receiver<Status>,
}

impl Acme {
    /// Loads the stored certificate, if any, into the resolver; contacts no one.
    pub fn start(settings: Settings) -> anyhow::Result<Self> {
        let cache = cache::Cache::open(settings.cache_dir.clone())?;
        let certificates = Arc::new(resolver::Certificates::default());
        let mut current = None;
        if let Some(issued) = cache.load_certificate(&settings.host) {
            tracing::info!(host = %settings.host, path = %cache.certificate_path(&settings.host).display(),
                "serving the stored certificate");
            current = Some((issued.not_before, issued.not_after));
            certificates.set_current(Arc::new(issued.key));
        }
        let (status, receiver) = watch::channel(Status::Starting);
        let renewal = renewal::Renewal { settings, cache, certificates: Arc::clone(&certificates), status, current };
        Ok(Self { resolver: certificates, task: Box::pin(renewal.run()), status: receiver })
    }
}
