//! HTTPS: what the server needs to speak TLS, and each connection's handshake.
//!
//! Certificates come from a resolver, chosen per handshake, so that they can change while
//! the server runs: [`CertificateFiles`] follows a certificate and key on disk; an ACME
//! client answers with its own certificates (and its TLS-ALPN-01 challenge certificates).

mod files;

use std::sync::Arc;

use axum::http::HeaderValue;
use rustls::pki_types::ServerName;
use rustls::server::{ParsedCertificate, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use rustls::ServerConfig;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio_rustls::server::TlsStream;
use tokio_rustls::TlsAcceptor;

pub use self::files::{CertificateError, CertificateFiles};

/// The ALPN protocol of an ACME TLS-ALPN-01 challenge (RFC 8737).
pub const ACME_TLS_ALPN: &[u8] = b"acme-tls/1";

/// The only application protocol served: the server speaks HTTP/1.1 alone.
const HTTP_1_1: &[u8] = b"http/1.1";

/// How the server speaks TLS.
pub struct Tls {
    /// Chooses the certificate of each handshake.
    pub resolver: Arc<dyn ResolvesServerCert>,
    /// Offer ALPN `acme-tls/1` too. A connection that negotiates it is closed right after
    /// its handshake, without HTTP: the handshake itself answered the ACME server's
    /// TLS-ALPN-01 challenge, with the certificate the resolver chose for it.
    pub acme_tls_alpn: bool,
    /// The `max-age` of the Strict-Transport-Security header on every response (seconds).
    pub hsts_max_age: u64,
}

/// The TLS side of the server: built once, used by every connection.
pub(super) struct Acceptor {
    acceptor: TlsAcceptor,
    acme_tls_alpn: bool,
    /// The Strict-Transport-Security header of every response over TLS.
    pub(super) hsts: HeaderValue,
}

impl Acceptor {
    /// TLS 1.2 and 1.3 with the ring provider's safe defaults; no client certificates.
    pub fn new(tls: Tls) -> Result<Self, rustls::Error> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_no_client_auth()
            .with_cert_resolver(tls.resolver);
        config.alpn_protocols = vec![HTTP_1_1.to_vec()];
        if tls.acme_tls_alpn {
            config.alpn_protocols.push(ACME_TLS_ALPN.to_vec());
        }
        Ok(Self {
            acceptor: TlsAcceptor::from(Arc::new(config)),
            acme_tls_alpn: tls.acme_tls_alpn,
            hsts: super::hsts::policy(tls.hsts_max_age),
        })
    }

    /// Runs the handshake on `io`: the stream to serve HTTP on, or `None` when there is
    /// nothing to serve (the handshake failed, or it answered an ACME challenge).
    pub async fn accept<S>(&self, io: S) -> Option<TlsStream<S>>
    where
        S: AsyncRead + AsyncWrite + Unpin,
    {
        let mut stream = match self.acceptor.accept(io).await {
            Ok(stream) => stream,
            Err(e) => {
                // Scanners and plain-HTTP clients end here; nothing for an operator to do.
                tracing::debug!(error = %e, "TLS handshake failed");
                return None;
            }
        };
        if self.acme_tls_alpn && stream.get_ref().1.alpn_protocol() == Some(ACME_TLS_ALPN) {
            tracing::debug!("answered an ACME TLS-ALPN-01 challenge");
            let _ = stream.shutdown().await;
            return None;
        }
        Some(stream)
    }
}

/// Whether `certified`'s own certificate is valid for `host` (a DNS name or an IP address,
/// IPv6 with or without brackets), by its subject alternative names.
pub fn certificate_names(certified: &CertifiedKey, host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let (Ok(certificate), Ok(name)) = (certified.end_entity_cert(), ServerName::try_from(host)) else {
        return false;
    };
    ParsedCertificate::try_from(certificate)
        .is_ok_and(|parsed| rustls::client::verify_server_name(&parsed, &name).is_ok())
}
