//! The signature of a delivery: `Ferrozone-Signature: t=<unix seconds>,v1=<hex>` where the
//! hex is HMAC-SHA256 with the endpoint's secret over `"<t>.<body>"`. A receiver recomputes
//! it over the raw body it received, compares in constant time, and refuses a `t` more than
//! five minutes old (a replay).

use hmac::{Hmac, Mac};
use sha2::Sha256;

/// The header's name.
pub const HEADER: &str = "Ferrozone-Signature";

/// The hex HMAC-SHA256 of `"<timestamp>.<body>"` under `secret`.
pub fn signature(secret: &[u8], timestamp: i64, body: &[u8]) -> String {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(secret).unwrap_or_else(|_| unreachable!("HMAC takes any key"));
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    hex::encode(mac.finalize().into_bytes())
}

/// The header's value.
pub fn header(secret: &[u8], timestamp: i64, body: &[u8]) -> String {
    format!("t={timestamp},v1={}", signature(secret, timestamp, body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fixed_vector() {
        // Computed independently: printf '1700000000.{"seq":1}' | openssl dgst -sha256 -hmac whsec_test_secret_0123
        assert_eq!(
            header(b"whsec_test_secret_0123", 1_700_000_000, br#"{"seq":1}"#),
            "t=1700000000,v1=2d4a76b2f27dd94f8b4142d5a81bffe74af0ae2cdf86c0b88b0032d01d4d71ec"
        );
    }
}
