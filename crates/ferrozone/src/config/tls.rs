//! HTTPS served by Ferrozone itself: the certificate files, the plain-HTTP redirect
//! listener and Strict-Transport-Security (docs/operations.md, "HTTPS").

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context};
use clap::Args;
use ferrozone_http::server::CertificateFiles;

/// HTTPS settings.
#[derive(Debug, Clone, Args)]
pub struct Tls {
    /// PEM file with the HTTPS certificate chain, the server's own certificate first (with
    /// FERROZONE_TLS_KEY_FILE; without both, Ferrozone serves plain HTTP).
    #[arg(long, global = true, env = "FERROZONE_TLS_CERT_FILE", value_name = "FILE")]
    pub tls_cert_file: Option<PathBuf>,
    /// PEM file with the private key of that certificate (PKCS#8, PKCS#1 or SEC1).
    #[arg(long, global = true, env = "FERROZONE_TLS_KEY_FILE", value_name = "FILE")]
    pub tls_key_file: Option<PathBuf>,
    /// Seconds between two checks of the certificate files; a changed pair is served from
    /// the next connection on.
    #[arg(long, global = true, env = "FERROZONE_TLS_RELOAD_INTERVAL", default_value_t = 60,
          value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub tls_reload_interval: u64,
    /// Address of a plain-HTTP listener that only redirects (308) to the https external URL,
    /// such as 0.0.0.0:80.
    #[arg(long, global = true, env = "FERROZONE_HTTP_REDIRECT_LISTEN", value_name = "ADDRESS")]
    pub http_redirect_listen: Option<String>,
    /// Seconds browsers keep to HTTPS for this host after a response served over HTTPS
    /// (Strict-Transport-Security); 0 tells them to forget it.
    #[arg(long, global = true, env = "FERROZONE_HSTS_MAX_AGE", default_value_t = 63_072_000,
          value_parser = clap::value_parser!(u64).range(0..=630_720_000))]
    pub hsts_max_age: u64,
}

impl Tls {
    /// Whether Ferrozone serves HTTPS from certificate files.
    pub fn enabled(&self) -> bool {
        self.tls_cert_file.is_some() || self.tls_key_file.is_some()
    }

    /// The certificate files' resolver, loaded and followed; `None` without files. Every
    /// error names the setting and the file.
    pub fn certificate_files(&self) -> anyhow::Result<Option<Arc<CertificateFiles>>> {
        let (certificate, key) = match (&self.tls_cert_file, &self.tls_key_file) {
            (Some(certificate), Some(key)) => (certificate, key),
            (None, None) => return Ok(None),
            _ => bail!("FERROZONE_TLS_CERT_FILE and FERROZONE_TLS_KEY_FILE must be set together"),
        };
        let interval = Duration::from_secs(self.tls_reload_interval);
        let files = CertificateFiles::follow(certificate, key, interval)
            .context("FERROZONE_TLS_CERT_FILE, FERROZONE_TLS_KEY_FILE")?;
        Ok(Some(files))
    }
}
