//! A certificate chain and its private key in PEM files, followed while the server runs:
//! the files are checked every few seconds and a changed pair is served from the next
//! handshake on, without a restart. A pair that does not load (half written, a key that
//! does not match) is logged and the pair in use is kept.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError, RwLock, Weak};
use std::time::{Duration, SystemTime};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use zeroize::Zeroizing;

/// Why a certificate and key pair did not load. Each names the file at fault.
#[derive(Debug, thiserror::Error)]
pub enum CertificateError {
    #[error("reading {}: {source}", path.display())]
    Read { path: PathBuf, source: std::io::Error },
    #[error("{} is not PEM: {reason}", path.display())]
    NotPem { path: PathBuf, reason: String },
    #[error("{} holds no PEM certificate", path.display())]
    NoCertificate { path: PathBuf },
    #[error("{}: the certificate is not usable: {reason}", path.display())]
    BadCertificate { path: PathBuf, reason: String },
    #[error("{} holds no PEM private key", path.display())]
    NoKey { path: PathBuf },
    #[error("{}: the key is not usable: {reason}", path.display())]
    BadKey { path: PathBuf, reason: String },
    #[error("the key in {} is not the key of the certificate in {}", key.display(), certificate.display())]
    Mismatch { certificate: PathBuf, key: PathBuf },
}

/// Serves the pair of files at every handshake, whatever the client asks for (SNI).
#[derive(Debug)]
pub struct CertificateFiles {
    certificate_path: PathBuf,
    key_path: PathBuf,
    current: RwLock<Arc<CertifiedKey>>,
    /// The files as they were when last loaded, or last tried.
    seen: Mutex<Stamp>,
    /// The last reload failure logged, so that a pair that stays bad is logged once.
    failure: Mutex<Option<String>>,
}

impl CertificateFiles {
    /// Loads the pair, and checks the files again every `interval` for as long as the
    /// returned resolver is in use (the check runs on the current tokio runtime).
    pub fn follow(certificate: &Path, key: &Path, interval: Duration) -> Result<Arc<Self>, CertificateError> {
        let files = Arc::new(Self::load(certificate, key)?);
        tokio::spawn(poll(Arc::downgrade(&files), interval));
        Ok(files)
    }

    /// Loads the pair, once.
    pub fn load(certificate: &Path, key: &Path) -> Result<Self, CertificateError> {
        let seen = Stamp::of(certificate, key);
        let loaded = load_pair(certificate, key)?;
        Ok(Self {
            certificate_path: certificate.to_owned(),
            key_path: key.to_owned(),
            current: RwLock::new(Arc::new(loaded)),
            seen: Mutex::new(seen),
            failure: Mutex::new(None),
        })
    }

    /// The pair served now.
    pub fn current(&self) -> Arc<CertifiedKey> {
        self.current.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Loads the pair again if either file changed since it was last loaded or tried:
    /// `Ok(true)` when a new pair is served from now on.
    pub fn reload_if_changed(&self) -> Result<bool, CertificateError> {
        let stamp = Stamp::of(&self.certificate_path, &self.key_path);
        {
            let mut seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
            if *seen == stamp {
                return Ok(false);
            }
            *seen = stamp;
        }
        let loaded = load_pair(&self.certificate_path, &self.key_path)?;
        *self.current.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(loaded);
        Ok(true)
    }

    /// One check, logged: a new pair once, a failure once until it changes.
    fn check(&self) {
        let outcome = self.reload_if_changed();
        let mut failure = self.failure.lock().unwrap_or_else(PoisonError::into_inner);
        match outcome {
            Ok(false) => {}
            Ok(true) => {
                *failure = None;
                tracing::info!(certificate = %self.certificate_path.display(), "serving the new TLS certificate");
            }
            Err(e) => {
                let text = e.to_string();
                if failure.as_deref() != Some(text.as_str()) {
                    tracing::warn!(error = %text, "the TLS certificate files changed but do not load; serving the previous certificate");
                    *failure = Some(text);
                }
            }
        }
    }
}

impl ResolvesServerCert for CertificateFiles {
    fn resolve(&self, _client_hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.current())
    }
}

/// Checks the files every `interval` until the resolver is dropped.
async fn poll(files: Weak<CertificateFiles>, interval: Duration) {
    let mut ticks = tokio::time::interval(interval);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    ticks.tick().await;
    loop {
        ticks.tick().await;
        let Some(files) = files.upgrade() else { return };
        // Reading and parsing two small files: off the runtime's worker threads all the same.
        let checked = tokio::task::spawn_blocking(move || files.check()).await;
        if let Err(e) = checked {
            tracing::warn!(error = %e, "checking the TLS certificate files failed");
        }
    }
}

/// What tells a file's change without reading it: its size, modification time and inode
/// (a file replaced by a rename, or a symbolic link switched to another file).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    certificate: Option<FileStamp>,
    key: Option<FileStamp>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FileStamp {
    len: u64,
    modified: Option<SystemTime>,
    inode: (u64, u64),
}

impl Stamp {
    /// Unreadable metadata stamps as `None`: the load that follows tells why.
    fn of(certificate: &Path, key: &Path) -> Self {
        Self { certificate: FileStamp::of(certificate), key: FileStamp::of(key) }
    }
}

impl FileStamp {
    fn of(path: &Path) -> Option<Self> {
        let meta = std::fs::metadata(path).ok()?;
        Some(Self { len: meta.len(), modified: meta.modified().ok(), inode: inode(&meta) })
    }
}

#[cfg(unix)]
fn inode(meta: &std::fs::Metadata) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    (meta.dev(), meta.ino())
}

#[cfg(not(unix))]
fn inode(_meta: &std::fs::Metadata) -> (u64, u64) {
    (0, 0)
}

/// Reads and checks a pair: a certificate chain (the server's own first), a private key
/// (PKCS#8, PKCS#1 or SEC1) of a kind rustls signs with, and the two belonging together.
fn load_pair(certificate_path: &Path, key_path: &Path) -> Result<CertifiedKey, CertificateError> {
    let read = |path: &Path| {
        std::fs::read(path)
            .map(Zeroizing::new)
            .map_err(|source| CertificateError::Read { path: path.to_owned(), source })
    };
    let not_pem = |path: &Path, e: rustls::pki_types::pem::Error| CertificateError::NotPem {
        path: path.to_owned(),
        reason: e.to_string(),
    };
    let chain = CertificateDer::pem_slice_iter(&read(certificate_path)?)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| not_pem(certificate_path, e))?;
    if chain.is_empty() {
        return Err(CertificateError::NoCertificate { path: certificate_path.to_owned() });
    }
    let key = match PrivateKeyDer::from_pem_slice(&read(key_path)?) {
        Ok(key) => key,
        Err(rustls::pki_types::pem::Error::NoItemsFound) => {
            return Err(CertificateError::NoKey { path: key_path.to_owned() })
        }
        Err(e) => return Err(not_pem(key_path, e)),
    };
    let provider = rustls::crypto::ring::default_provider();
    let signing = provider
        .key_provider
        .load_private_key(key)
        .map_err(|e| CertificateError::BadKey { path: key_path.to_owned(), reason: e.to_string() })?;
    let certified = CertifiedKey::new(chain, signing);
    match certified.keys_match() {
        Ok(()) => Ok(certified),
        Err(rustls::Error::InconsistentKeys(rustls::InconsistentKeys::KeyMismatch)) => {
            Err(CertificateError::Mismatch { certificate: certificate_path.to_owned(), key: key_path.to_owned() })
        }
        Err(e) => Err(CertificateError::BadCertificate { path: certificate_path.to_owned(), reason: e.to_string() }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A self-signed certificate for `localhost`: its PEM and its key's PEM.
    fn pair() -> (String, String) {
        let key = rcgen::KeyPair::generate().expect("a key");
        let params = rcgen::CertificateParams::new(vec!["localhost".to_owned()]).expect("parameters");
        (params.self_signed(&key).expect("a certificate").pem(), key.serialize_pem())
    }

    fn write(path: &Path, text: &str) {
        let aside = path.with_extension("new");
        std::fs::write(&aside, text).expect("writes");
        std::fs::rename(&aside, path).expect("renames");
    }

    #[test]
    fn a_changed_pair_is_loaded_and_a_bad_one_leaves_the_pair_in_use() {
        let dir = tempfile::tempdir().expect("a directory");
        let (certificate, key) = (dir.path().join("tls.crt"), dir.path().join("tls.key"));
        let (first, first_key) = pair();
        write(&certificate, &first);
        write(&key, &first_key);
        let files = CertificateFiles::load(&certificate, &key).expect("loads");
        let served = files.current();
        assert!(!files.reload_if_changed().expect("unchanged"));
        assert!(super::super::certificate_names(&served, "localhost"));
        assert!(!super::super::certificate_names(&served, "vpn.example.com"));

        let (second, second_key) = pair();
        write(&certificate, &second);
        assert!(matches!(files.reload_if_changed(), Err(CertificateError::Mismatch { .. })));
        assert_eq!(files.current().cert, served.cert);
        assert!(!files.reload_if_changed().expect("a failed pair is tried once"));

        write(&key, &second_key);
        assert!(files.reload_if_changed().expect("loads"));
        assert_ne!(files.current().cert, served.cert);
    }

    #[test]
    fn each_error_names_the_file() {
        let dir = tempfile::tempdir().expect("a directory");
        let (certificate, key) = (dir.path().join("tls.crt"), dir.path().join("tls.key"));
        let said = |c: &Path, k: &Path| CertificateFiles::load(c, k).expect_err("refused").to_string();
        assert!(said(&certificate, &key).starts_with(&format!("reading {}", certificate.display())));
        let (pem, key_pem) = pair();
        write(&certificate, "hello\n");
        write(&key, &key_pem);
        assert_eq!(said(&certificate, &key), format!("{} holds no PEM certificate", certificate.display()));
        write(&certificate, &pem);
        write(&key, &pem);
        assert_eq!(said(&certificate, &key), format!("{} holds no PEM private key", key.display()));
        write(&key, "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n");
        assert!(said(&certificate, &key).starts_with(&format!("{}: the key is not usable", key.display())));
    }
}
