//! Firezone's encryption at rest: the Cloak `AES.GCM.V1` format of its two encrypted
//! columns (`devices.preshared_key`, `mfa_methods.payload`).
//!
//! A value is a key-tag header (`01 0A "AES.GCM.V1"`), a 12-byte IV, the 16-byte GCM tag and
//! the ciphertext, sealed with AES-256-GCM under the base64-decoded `DATABASE_ENCRYPTION_KEY`
//! and the fixed associated data `AES256GCM`. Sealing exists for the test fixture: the
//! import itself only opens.

use aes_gcm::aead::{Aead, KeyInit, OsRng, Payload};
use aes_gcm::{AeadCore, Aes256Gcm, Key, Nonce};
use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use zeroize::Zeroizing;

/// The key-tag header every value starts with: reserved byte, tag length, tag.
const HEADER: &[u8] = b"\x01\x0aAES.GCM.V1";
/// Cloak's fixed associated data.
const AAD: &[u8] = b"AES256GCM";
const IV_LEN: usize = 12;
const TAG_LEN: usize = 16;

/// Why a value does not open.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum OpenError {
    /// Not a Cloak `AES.GCM.V1` value at all (Firezone filled some old rows with junk).
    #[error("is not a Cloak AES.GCM.V1 value")]
    NotCloak,
    /// The tag does not match: a wrong key when every value fails so, else a damaged value.
    #[error("does not decrypt (authentication tag mismatch)")]
    TagMismatch,
}

/// The source installation's `DATABASE_ENCRYPTION_KEY`. Its `Debug` shows nothing of it.
#[derive(Clone)]
pub struct CloakKey(Aes256Gcm);

impl std::fmt::Debug for CloakKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CloakKey(..)")
    }
}

impl CloakKey {
    /// Reads the key as Firezone does: standard base64 (padded) of exactly 32 bytes.
    pub fn from_base64(text: &str) -> anyhow::Result<Self> {
        let bytes = Zeroizing::new(
            STANDARD.decode(text.trim()).map_err(|_| anyhow::anyhow!("DATABASE_ENCRYPTION_KEY is not valid base64"))?,
        );
        if bytes.len() != 32 {
            anyhow::bail!("DATABASE_ENCRYPTION_KEY must decode to 32 bytes, got {}", bytes.len());
        }
        Ok(Self(Aes256Gcm::new(Key::<Aes256Gcm>::from_slice(&bytes))))
    }

    /// The plaintext of a Cloak value.
    pub fn open(&self, value: &[u8]) -> Result<Zeroizing<Vec<u8>>, OpenError> {
        let rest = value.strip_prefix(HEADER).ok_or(OpenError::NotCloak)?;
        if rest.len() < IV_LEN + TAG_LEN {
            return Err(OpenError::NotCloak);
        }
        let (iv, rest) = rest.split_at(IV_LEN);
        let (tag, ciphertext) = rest.split_at(TAG_LEN);
        // The crate wants the tag after the ciphertext; Cloak stores it before.
        let mut sealed = Vec::with_capacity(ciphertext.len() + TAG_LEN);
        sealed.extend_from_slice(ciphertext);
        sealed.extend_from_slice(tag);
        self.0
            .decrypt(Nonce::from_slice(iv), Payload { msg: &sealed, aad: AAD })
            .map(Zeroizing::new)
            .map_err(|_| OpenError::TagMismatch)
    }

    /// A Cloak value of `plaintext` with a random IV, as Firezone writes them.
    pub fn seal(&self, plaintext: &[u8]) -> Vec<u8> {
        self.seal_with_iv(&Aes256Gcm::generate_nonce(&mut OsRng).into(), plaintext)
    }

    fn seal_with_iv(&self, iv: &[u8; IV_LEN], plaintext: &[u8]) -> Vec<u8> {
        let sealed = self
            .0
            .encrypt(Nonce::from_slice(iv), Payload { msg: plaintext, aad: AAD })
            .unwrap_or_else(|_| unreachable!("AES-GCM encryption of an in-memory buffer cannot fail"));
        let (ciphertext, tag) = sealed.split_at(sealed.len() - TAG_LEN);
        [HEADER, iv, tag, ciphertext].concat()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";

    /// Made with another AES-GCM implementation (Python's `cryptography`) from key bytes
    /// 0..32, IV bytes 100..112 and the layout above.
    const VECTOR: &str = "010a4145532e47434d2e56316465666768696a6b6c6d6e6fa3740f76e5aa1064d80ee9ef34d2dcbd\
                          3339ad031a9b33ea1c587da99b2029bc35934048ec0fba31f6bee00cba93ea0ceca81285245fa62680";
    const PLAINTEXT: &[u8] = br#"{"secret":"AAECAwQFBgcICQoLDA0ODxAREhM="}"#;

    fn hex(text: &str) -> Vec<u8> {
        (0..text.len()).step_by(2).map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap()).collect()
    }

    #[test]
    fn opens_a_fixed_vector_and_seals_it_identically() {
        let key = CloakKey::from_base64(KEY).unwrap();
        assert_eq!(key.open(&hex(VECTOR)).unwrap().as_slice(), PLAINTEXT);
        let iv: [u8; 12] = std::array::from_fn(|i| 100 + i as u8);
        assert_eq!(key.seal_with_iv(&iv, PLAINTEXT), hex(VECTOR));
    }

    #[test]
    fn a_psk_value_is_84_bytes_and_round_trips() {
        let key = CloakKey::from_base64(KEY).unwrap();
        let psk = b"MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=";
        let sealed = key.seal(psk);
        assert_eq!(sealed.len(), 84);
        assert_ne!(sealed, key.seal(psk), "each value gets its own IV");
        assert_eq!(key.open(&sealed).unwrap().as_slice(), psk);
    }

    #[test]
    fn wrong_key_damage_and_junk_are_told_apart() {
        let key = CloakKey::from_base64(KEY).unwrap();
        let other = CloakKey::from_base64(&STANDARD.encode([9u8; 32])).unwrap();
        let mut value = key.seal(b"secret");
        assert_eq!(other.open(&value).unwrap_err(), OpenError::TagMismatch);
        let last = value.len() - 1;
        value[last] ^= 1;
        assert_eq!(key.open(&value).unwrap_err(), OpenError::TagMismatch);
        assert_eq!(key.open(b"bm90IGNsb2Fr").unwrap_err(), OpenError::NotCloak);
        assert_eq!(key.open(HEADER).unwrap_err(), OpenError::NotCloak);
    }

    #[test]
    fn the_key_must_be_32_bytes_of_base64() {
        assert!(CloakKey::from_base64("not base64!").is_err());
        assert!(CloakKey::from_base64(&STANDARD.encode([1u8; 16])).is_err());
        assert!(CloakKey::from_base64(&format!("{KEY}\n")).is_ok());
    }
}
