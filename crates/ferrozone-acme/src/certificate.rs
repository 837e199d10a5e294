//! Certificates as PEM and as rustls serves them: parsing, validity, the renewal time,
//! and the self-signed TLS-ALPN-01 challenge certificate.

use std::time::{Duration, SystemTime};

use anyhow::Context;
use rcgen::{CertificateParams, CustomExtension, KeyPair};
use rustls::crypto::ring::default_provider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::sign::CertifiedKey;
use x509_cert::der::Decode;

/// A certificate chain with its private key, as stored and served.
pub(crate) struct Issued {
    pub(crate) key: CertifiedKey,
    pub(crate) not_before: SystemTime,
    pub(crate) not_after: SystemTime,
}

impl Issued {
    /// Parses a PEM text holding the chain (leaf first) and the private key.
    pub(crate) fn from_pem(pem: &str) -> anyhow::Result<Self> {
        let chain = CertificateDer::pem_slice_iter(pem.as_bytes())
            .collect::<Result<Vec<_>, _>>()
            .context("reading the certificates")?;
        let leaf = chain.first().context("no certificate")?;
        let parsed = x509_cert::Certificate::from_der(leaf).context("parsing the certificate")?;
        let validity = parsed.tbs_certificate.validity;
        let key = PrivateKeyDer::from_pem_slice(pem.as_bytes()).context("reading the private key")?;
        let key = CertifiedKey::from_der(chain, key, &default_provider()).context("loading the key pair")?;
        Ok(Self {
            key,
            not_before: validity.not_before.to_system_time(),
            not_after: validity.not_after.to_system_time(),
        })
    }
}

/// When to order the next certificate: once a third of the lifetime is left (30 days for a
/// 90-day certificate, 2 for a 6-day one), which leaves room for retries through a CA outage
/// well before the certificate expires.
pub(crate) fn renewal_time(not_before: SystemTime, not_after: SystemTime) -> SystemTime {
    let lifetime = not_after.duration_since(not_before).unwrap_or(Duration::ZERO);
    not_after.checked_sub(lifetime / 3).unwrap_or(not_after)
}

/// The self-signed certificate that proves control of `host` to the CA (RFC 8737 §3): the
/// host as its only name and the critical acmeIdentifier extension holding the SHA-256
/// digest of the key authorization.
pub(crate) fn challenge_certificate(host: &str, key_authorization_digest: &[u8]) -> anyhow::Result<CertifiedKey> {
    let mut params = CertificateParams::new(vec![host.to_owned()])?;
    params.custom_extensions = vec![CustomExtension::new_acme_identifier(key_authorization_digest)];
    let key = KeyPair::generate()?;
    let certificate = params.self_signed(&key)?;
    let key_der = PrivateKeyDer::try_from(key.serialize_der()).map_err(anyhow::Error::msg)?;
    // Not `CertifiedKey::from_der`: its key check parses the certificate with webpki, which
    // refuses the critical acmeIdentifier extension it does not know.
    let signing_key = default_provider().key_provider.load_private_key(key_der)?;
    Ok(CertifiedKey::new(vec![certificate.der().clone()], signing_key))
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAY: Duration = Duration::from_secs(86_400);

    #[test]
    fn renews_with_a_third_of_the_lifetime_left() {
        let issued = SystemTime::UNIX_EPOCH + 1000 * DAY;
        assert_eq!(renewal_time(issued, issued + 90 * DAY), issued + 60 * DAY);
        assert_eq!(renewal_time(issued, issued + 6 * DAY), issued + 4 * DAY);
    }

    #[test]
    fn a_certificate_with_no_lifetime_is_due_when_it_expires() {
        let at = SystemTime::UNIX_EPOCH + 1000 * DAY;
        assert_eq!(renewal_time(at, at - DAY), at - DAY);
    }
}
