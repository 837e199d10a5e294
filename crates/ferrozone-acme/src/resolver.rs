//! The certificate the TLS server presents: the current one for every ordinary
//! handshake, and a TLS-ALPN-01 challenge certificate (RFC 8737) for the CA's validation
//! handshakes, which offer ALPN `acme-tls/1` and name the host being validated.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;

/// The ALPN protocol of TLS-ALPN-01 validation handshakes.
pub const ACME_TLS_ALPN: &[u8] = b"acme-tls/1";

#[derive(Default)]
pub(crate) struct Certificates {
    current: RwLock<Option<Arc<CertifiedKey>>>,
    /// Pending challenges by lower-case host name.
    challenges: Mutex<HashMap<String, Arc<CertifiedKey>>>,
}

impl Certificates {
    pub(crate) fn set_current(&self, certificate: Arc<CertifiedKey>) {
        *self.current.write().unwrap_or_else(PoisonError::into_inner) = Some(certificate);
    }

    /// Answers validation handshakes for `host` with `certificate` until the returned
    /// guard is dropped, so an order that fails midway leaves no challenge behind.
    pub(crate) fn answer_challenge(self: &Arc<Self>, host: &str, certificate: CertifiedKey) -> ChallengeGuard {
        let host = host.to_ascii_lowercase();
        self.lock_challenges().insert(host.clone(), Arc::new(certificate));
        ChallengeGuard { certificates: Arc::clone(self), host }
    }

    fn lock_challenges(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<CertifiedKey>>> {
        self.challenges.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl ResolvesServerCert for Certificates {
    fn resolve(&self, hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        let validating = hello.alpn().is_some_and(|mut protocols| protocols.any(|p| p == ACME_TLS_ALPN));
        if validating {
            // A validation handshake gets the challenge certificate or nothing: never the
            // current certificate, which would fail validation anyway.
            let host = hello.server_name()?.to_ascii_lowercase();
            return self.lock_challenges().get(&host).cloned();
        }
        self.current.read().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

impl fmt::Debug for Certificates {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let current = self.current.read().unwrap_or_else(PoisonError::into_inner).is_some();
        let challenges: Vec<String> = self.lock_challenges().keys().cloned().collect();
        f.debug_struct("Certificates").field("current", &current).field("challenges", &challenges).finish()
    }
}

/// Withdraws a challenge certificate when dropped.
pub(crate) struct ChallengeGuard {
    certificates: Arc<Certificates>,
    host: String,
}

impl Drop for ChallengeGuard {
    fn drop(&mut self) {
        self.certificates.lock_challenges().remove(&self.host);
    }
}
