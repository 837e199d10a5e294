//! Automatic certificates over ACME for the external URL's host (docs/operations.md,
//! "Automatic certificates (ACME)").

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{bail, Context};
use clap::Args;
use ferrozone_acme::{Acme, Task, LETS_ENCRYPT_DIRECTORY};
use rustls::server::ResolvesServerCert;

use super::Config;

/// Automatic certificates: off unless `FERROZONE_ACME` is true.
#[derive(Debug, Clone, Args)]
pub struct AcmeSettings {
    /// Get and renew the HTTPS certificate for the external URL's host from an ACME CA
    /// (Let's Encrypt by default), validated with TLS-ALPN-01 on port 443. Enabling it
    /// agrees to the CA's terms of service.
    #[arg(long, global = true, env = "FERROZONE_ACME", default_value_t = false, action = clap::ArgAction::Set)]
    pub acme: bool,
    /// The ACME server's directory URL.
    #[arg(long, global = true, env = "FERROZONE_ACME_DIRECTORY_URL", default_value = LETS_ENCRYPT_DIRECTORY)]
    pub acme_directory_url: String,
    /// Email the CA may write to about the account.
    #[arg(long, global = true, env = "FERROZONE_ACME_CONTACT_EMAIL")]
    pub acme_contact_email: Option<String>,
    /// PEM root certificate that signs the ACME server's own HTTPS certificate, trusted for
    /// it instead of the system's roots: for a private CA.
    #[arg(long, global = true, env = "FERROZONE_ACME_CA_FILE", value_name = "FILE")]
    pub acme_ca_file: Option<PathBuf>,
}

impl AcmeSettings {
    /// The ACME client's settings, or `None` when ACME is off; errors name the setting.
    /// `certificate_files` tells whether certificate files are configured, which ACME would
    /// contradict.
    pub fn settings(
        &self,
        external_url: &str,
        data_dir: &Path,
        certificate_files: bool,
    ) -> anyhow::Result<Option<ferrozone_acme::Settings>> {
        if !self.acme {
            return Ok(None);
        }
        if certificate_files {
            bail!("FERROZONE_ACME: certificate files are configured too; use one or the other");
        }
        let url = url::Url::parse(external_url)
            .with_context(|| format!("FERROZONE_EXTERNAL_URL: `{external_url}` is not a URL"))?;
        if url.scheme() != "https" {
            bail!("FERROZONE_ACME needs an https FERROZONE_EXTERNAL_URL, not `{external_url}`");
        }
        let host = match url.host_str() {
            Some(host) if host.trim_matches(['[', ']']).parse::<IpAddr>().is_err() => host.to_ascii_lowercase(),
            _ => bail!("FERROZONE_ACME needs a DNS name in FERROZONE_EXTERNAL_URL, not `{external_url}`"),
        };
        if url.port().is_some_and(|port| port != 443) {
            tracing::warn!(%external_url, "the ACME CA validates on port 443: forward it to the HTTPS listener");
        }
        let directory = url::Url::parse(&self.acme_directory_url).ok().filter(|url| url.scheme() == "https");
        if directory.is_none() {
            bail!("FERROZONE_ACME_DIRECTORY_URL: `{}` is not an https URL", self.acme_directory_url);
        }
        let contact_email = self.acme_contact_email.as_deref().map(str::trim).filter(|email| !email.is_empty());
        if contact_email.is_some_and(|email| !email.contains('@') || email.contains([' ', ',', ':'])) {
            bail!("FERROZONE_ACME_CONTACT_EMAIL: `{}` is not an email address", contact_email.unwrap_or_default());
        }
        if let Some(path) = &self.acme_ca_file {
            std::fs::metadata(path).with_context(|| format!("FERROZONE_ACME_CA_FILE: {}", path.display()))?;
        }
        Ok(Some(ferrozone_acme::Settings {
            host,
            directory_url: self.acme_directory_url.clone(),
            contact_email: contact_email.map(str::to_owned),
            ca_file: self.acme_ca_file.clone(),
            cache_dir: data_dir.join("acme"),
        }))
    }
}

/// The HTTPS server's certificate resolver and the task that keeps its certificate, when
/// ACME is on; for `serve`, which runs the task under its supervisor and serves HTTPS with
/// the resolver, offering ALPN `acme-tls/1`.
pub fn acme_tls(
    config: &Config,
    data_dir: &Path,
    certificate_files: bool,
) -> anyhow::Result<Option<(Arc<dyn ResolvesServerCert>, Task)>> {
    let Some(settings) = config.acme.settings(&config.external_url, data_dir, certificate_files)? else {
        return Ok(None);
    };
    let acme = Acme::start(settings).context("starting automatic certificates")?;
    Ok(Some((acme.resolver, acme.task)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(args: &[&str]) -> Config {
        let mut argv = vec!["ferrozone"];
        argv.extend_from_slice(args);
        argv.push("serve");
        crate::cli::Cli::parse_args(argv).unwrap().config
    }

    fn error(args: &[&str], certificate_files: bool) -> String {
        let config = config(args);
        let outcome = config.acme.settings(&config.external_url, Path::new("data"), certificate_files);
        format!("{:#}", outcome.expect_err("refused"))
    }

    #[test]
    fn off_by_default() {
        let config = config(&["--external-url", "https://vpn.example.com"]);
        assert!(config.acme.settings(&config.external_url, Path::new("data"), false).unwrap().is_none());
        assert!(acme_tls(&config, Path::new("data"), false).unwrap().is_none());
    }

    #[test]
    fn on_for_the_external_hosts_name() {
        let config = config(&[
            "--acme=true",
            "--external-url",
            "https://VPN.example.com",
            "--acme-contact-email",
            "ops@example.com",
        ]);
        let settings = config.acme.settings(&config.external_url, Path::new("/srv/data"), false).unwrap().unwrap();
        assert_eq!(settings.host, "vpn.example.com");
        assert_eq!(settings.directory_url, LETS_ENCRYPT_DIRECTORY);
        assert_eq!(settings.contact_email.as_deref(), Some("ops@example.com"));
        assert_eq!(settings.cache_dir, Path::new("/srv/data/acme"));
    }

    #[test]
    fn refuses_what_cannot_work() {
        let https = ["--acme=true", "--external-url", "https://vpn.example.com"];
        assert!(error(&https, true).contains("certificate files"));
        assert!(error(&["--acme=true", "--external-url", "http://vpn.example.com"], false).contains("https"));
        assert!(error(&["--acme=true", "--external-url", "https://192.0.2.1"], false).contains("DNS name"));
        assert!(error(&["--acme=true", "--external-url", "https://[2001:db8::1]"], false).contains("DNS name"));
        let directory = [&https[..], &["--acme-directory-url", "http://ca.example.com/dir"]].concat();
        assert!(error(&directory, false).contains("FERROZONE_ACME_DIRECTORY_URL"));
        let email = [&https[..], &["--acme-contact-email", "not an email"]].concat();
        assert!(error(&email, false).contains("FERROZONE_ACME_CONTACT_EMAIL"));
        let ca = [&https[..], &["--acme-ca-file", "/nonexistent/ca.pem"]].concat();
        assert!(error(&ca, false).contains("FERROZONE_ACME_CA_FILE"));
    }

    #[test]
    fn starts_from_the_data_directory() {
        let data = tempfile::tempdir().unwrap();
        let config = config(&["--acme=true", "--external-url", "https://vpn.example.com"]);
        let started = acme_tls(&config, data.path(), false).unwrap();
        assert!(started.is_some());
        assert!(data.path().join("acme").is_dir());
    }
}
