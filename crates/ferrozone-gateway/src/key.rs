//! A 32-byte WireGuard key: base64 in the API and the database, hex on the UAPI socket.

use std::fmt;

use base64::engine::general_purpose::STANDARD;
use base64::Engine;

/// A public, private or preshared key. `Debug` shows the first characters, to tell public
/// keys apart in logs; types holding secret keys redact them in their own `Debug`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Key(pub [u8; 32]);

impl Key {
    /// Standard base64 of exactly 32 bytes.
    pub fn from_base64(text: &str) -> anyhow::Result<Self> {
        let bytes = STANDARD.decode(text.trim()).map_err(|_| anyhow::anyhow!("a key is not base64"))?;
        Ok(Self(bytes.try_into().map_err(|_| anyhow::anyhow!("a key is not 32 bytes"))?))
    }

    /// Lower-case hex of 32 bytes, as the UAPI writes keys.
    pub fn from_hex(text: &str) -> anyhow::Result<Self> {
        let mut bytes = [0u8; 32];
        hex::decode_to_slice(text, &mut bytes).map_err(|_| anyhow::anyhow!("a key is not 64 hex digits"))?;
        Ok(Self(bytes))
    }

    pub fn to_base64(&self) -> String {
        STANDARD.encode(self.0)
    }

    pub fn to_hex(&self) -> String {
        hex::encode(self.0)
    }

    /// The all-zero key, which the UAPI reports for "no preshared key".
    pub fn is_zero(&self) -> bool {
        self.0 == [0; 32]
    }
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Key({}…)", &self.to_base64()[..6])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodings_round_trip_and_are_strict() {
        let key = Key([7; 32]);
        assert_eq!(Key::from_base64(&key.to_base64()).unwrap(), key);
        assert_eq!(Key::from_hex(&key.to_hex()).unwrap(), key);
        assert_eq!(key.to_hex().len(), 64);
        assert!(Key::from_base64("AAAA").is_err());
        assert!(Key::from_hex(&"0".repeat(62)).is_err());
        assert!(Key::from_hex(&"g".repeat(64)).is_err());
        assert!(Key([0; 32]).is_zero() && !key.is_zero());
    }
}
