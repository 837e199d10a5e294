//! WireGuard keys: Curve25519, exchanged as standard base64 of 32 bytes (44 characters).

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use rand::rngs::OsRng;
use rand::RngCore;
use x25519_dalek::{PublicKey, StaticSecret};
use zeroize::Zeroizing;

pub struct KeyPair {
    pub private_key: Zeroizing<String>,
    pub public_key: String,
}

/// Strict check: standard base64 with padding that decodes to exactly 32 bytes.
pub fn is_valid_key(text: &str) -> bool {
    text.len() == 44 && matches!(STANDARD.decode(text), Ok(bytes) if bytes.len() == 32)
}

pub fn generate_keypair() -> KeyPair {
    #[cfg(test)]
    super::key_work::count();
    let secret = StaticSecret::random_from_rng(OsRng);
    let public = PublicKey::from(&secret);
    KeyPair {
        private_key: Zeroizing::new(STANDARD.encode(secret.to_bytes())),
        public_key: STANDARD.encode(public.as_bytes()),
    }
}

/// A private key handed to a client once (base64 text): wiped when dropped, and never shown
/// by `Debug`, so that no log line can carry it.
pub struct PrivateKey(Zeroizing<String>);

impl PrivateKey {
    pub fn new(text: Zeroizing<String>) -> Self {
        Self(text)
    }

    /// The key itself, for the one response that shows it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for PrivateKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PrivateKey(<redacted>)")
    }
}

/// The public key of a base64 private key, or `None` if it is not a valid key.
pub fn public_key_of(private_key: &str) -> Option<String> {
    let bytes = Zeroizing::new(STANDARD.decode(private_key).ok()?);
    let array: [u8; 32] = bytes.as_slice().try_into().ok()?;
    let secret = StaticSecret::from(array);
    Some(STANDARD.encode(PublicKey::from(&secret).as_bytes()))
}

/// A preshared key: 32 random bytes.
pub fn generate_psk() -> Zeroizing<String> {
    #[cfg(test)]
    super::key_work::count();
    let mut bytes = Zeroizing::new([0u8; 32]);
    OsRng.fill_bytes(bytes.as_mut());
    Zeroizing::new(STANDARD.encode(bytes.as_ref()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_format_is_strict() {
        let k = generate_keypair();
        assert!(is_valid_key(&k.public_key));
        assert!(is_valid_key(&generate_psk()));
        assert!(!is_valid_key(""));
        assert!(!is_valid_key(&k.public_key[..43]));
        assert!(!is_valid_key(&format!("{}=", &k.public_key[..43])) || k.public_key.ends_with('='));
        // 44 characters, but 33 bytes' worth without padding: not a key.
        assert!(!is_valid_key("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"));
        assert!(!is_valid_key("!AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="));
    }

    #[test]
    fn public_key_is_derived_from_private_key() {
        let k = generate_keypair();
        assert_eq!(public_key_of(&k.private_key).as_deref(), Some(k.public_key.as_str()));
        assert_eq!(public_key_of("nope"), None);
    }

    #[test]
    fn private_keys_do_not_show_in_debug() {
        let k = generate_keypair();
        let shown = format!("{:?}", PrivateKey::new(k.private_key.clone()));
        assert!(!shown.contains(k.private_key.as_str()), "{shown}");
    }
}
