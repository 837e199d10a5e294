//! AEAD encryption of secrets stored in the database (the server private key and
//! every preshared key), with XChaCha20-Poly1305 and a random 192-bit nonce per value.

use std::fmt;

use anyhow::{anyhow, bail, Context};
use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use chacha20poly1305::aead::{Aead, KeyInit, OsRng};
use chacha20poly1305::{AeadCore, Key, XChaCha20Poly1305, XNonce};
use hmac::{Hmac, Mac};
use sha2::Sha256;
use zeroize::Zeroizing;

const NONCE_LEN: usize = 24;

/// An encrypted value: nonce followed by ciphertext and tag. Its `Debug` shows only its size.
#[derive(Clone, PartialEq, Eq)]
pub struct Sealed(pub Vec<u8>);

impl fmt::Debug for Sealed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Sealed({} bytes)", self.0.len())
    }
}

/// The key that protects secrets at rest. Every process sharing a database must use the same one.
#[derive(Clone)]
pub struct Cipher {
    aead: XChaCha20Poly1305,
    /// The key itself, kept only to derive sub-keys ([`Cipher::derive_key`]).
    key: Zeroizing<[u8; 32]>,
}

impl fmt::Debug for Cipher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Cipher(..)")
    }
}

impl Cipher {
    /// A fresh random key, base64-encoded, for the key file written on first start.
    pub fn generate_key() -> String {
        STANDARD.encode(XChaCha20Poly1305::generate_key(&mut OsRng))
    }

    /// Reads a base64-encoded 32-byte key (surrounding white space is ignored).
    pub fn from_base64(text: &str) -> anyhow::Result<Self> {
        let bytes = Zeroizing::new(STANDARD.decode(text.trim()).context("the secret key is not valid base64")?);
        if bytes.len() != 32 {
            bail!("the secret key must be 32 bytes of base64 (44 characters), got {} bytes", bytes.len());
        }
        let mut key = Zeroizing::new([0u8; 32]);
        key.copy_from_slice(&bytes);
        Ok(Self { aead: XChaCha20Poly1305::new(Key::from_slice(&bytes)), key })
    }

    /// A key for another `purpose` (a MAC, say), derived from this one with HMAC-SHA256 so
    /// that neither reveals the other and each purpose has its own.
    pub fn derive_key(&self, purpose: &str) -> Zeroizing<[u8; 32]> {
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(self.key.as_ref())
            .unwrap_or_else(|_| unreachable!("HMAC takes a key of any length"));
        mac.update(b"ferrozone sub-key v1\0");
        mac.update(purpose.as_bytes());
        Zeroizing::new(mac.finalize().into_bytes().into())
    }

    pub fn seal(&self, plaintext: &[u8]) -> Sealed {
        #[cfg(test)]
        super::key_work::count();
        let nonce = XChaCha20Poly1305::generate_nonce(&mut OsRng);
        let ciphertext = self
            .aead
            .encrypt(&nonce, plaintext)
            .unwrap_or_else(|_| unreachable!("XChaCha20-Poly1305 encryption of an in-memory buffer cannot fail"));
        let mut out = Vec::with_capacity(NONCE_LEN + ciphertext.len());
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&ciphertext);
        Sealed(out)
    }

    pub fn open(&self, sealed: &Sealed) -> anyhow::Result<Zeroizing<Vec<u8>>> {
        if sealed.0.len() < NONCE_LEN {
            bail!("sealed value is too short");
        }
        let (nonce, ciphertext) = sealed.0.split_at(NONCE_LEN);
        self.aead
            .decrypt(XNonce::from_slice(nonce), ciphertext)
            .map(Zeroizing::new)
            .map_err(|_| anyhow!("cannot decrypt a stored secret: wrong secret key, or corrupted data"))
    }

    pub fn open_str(&self, sealed: &Sealed) -> anyhow::Result<String> {
        let bytes = self.open(sealed)?;
        String::from_utf8(bytes.to_vec()).context("decrypted secret is not UTF-8")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_nonce_is_fresh() {
        let c = Cipher::from_base64(&Cipher::generate_key()).unwrap();
        let a = c.seal(b"secret");
        let b = c.seal(b"secret");
        assert_ne!(a, b, "each value gets its own nonce");
        assert_eq!(c.open(&a).unwrap().as_slice(), b"secret");
        assert_eq!(c.open_str(&b).unwrap(), "secret");
    }

    #[test]
    fn wrong_key_or_tampering_is_an_error() {
        let c = Cipher::from_base64(&Cipher::generate_key()).unwrap();
        let other = Cipher::from_base64(&Cipher::generate_key()).unwrap();
        let mut sealed = c.seal(b"secret");
        assert!(other.open(&sealed).is_err());
        let last = sealed.0.len() - 1;
        sealed.0[last] ^= 1;
        assert!(c.open(&sealed).is_err());
        assert!(c.open(&Sealed(vec![1, 2, 3])).is_err());
    }

    #[test]
    fn derived_keys_differ_by_purpose_and_key() {
        let c = Cipher::from_base64(&Cipher::generate_key()).unwrap();
        let other = Cipher::from_base64(&Cipher::generate_key()).unwrap();
        assert_eq!(c.derive_key("a"), c.clone().derive_key("a"));
        assert_ne!(c.derive_key("a"), c.derive_key("b"));
        assert_ne!(c.derive_key("a"), other.derive_key("a"));
        assert_ne!(c.derive_key("a").as_slice(), c.key.as_slice());
    }

    #[test]
    fn key_must_be_32_bytes_of_base64() {
        assert!(Cipher::from_base64("not base64!").is_err());
        assert!(Cipher::from_base64(&STANDARD.encode([0u8; 16])).is_err());
        assert!(Cipher::from_base64(&format!(" {}\n", STANDARD.encode([7u8; 32]))).is_ok());
    }
}
