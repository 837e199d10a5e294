//! Time-based one-time passwords (RFC 6238 on RFC 4226's HOTP) as every authenticator app
//! computes them by default: HMAC-SHA-1 of the 30-second step number, 6 digits. A code is
//! accepted from the current step or one either side (clocks drift), and never from a step
//! at or before the last one accepted, so each code works at most once.
//!
//! Also the recovery codes that stand in for a lost authenticator: random, shown once,
//! stored only as a keyed hash, each usable once.

use hmac::{Hmac, Mac};
use rand::rngs::OsRng;
use rand::RngCore;
use sha1::Sha1;
use sha2::Sha256;
use subtle::ConstantTimeEq;
use zeroize::Zeroizing;

/// Seconds per step.
pub const STEP_SECS: i64 = 30;
/// Digits of a code.
pub const DIGITS: usize = 6;
/// Bytes of a new secret: 160 bits, the size of SHA-1's output (RFC 4226 section 4).
pub const SECRET_LEN: usize = 20;
/// Steps either side of the current one whose codes are accepted.
pub const SKEW_STEPS: i64 = 1;
/// What the recovery codes' hashing key is derived for ([`super::Cipher::derive_key`]).
pub const RECOVERY_CODE_PURPOSE: &str = "totp-recovery-code";
/// Random characters in a recovery code (5 bits each: 50 bits).
const RECOVERY_CODE_CHARS: usize = 10;

/// RFC 4648 base32, the alphabet of `otpauth://` secrets.
const BASE32: &[u8; 32] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

/// A fresh random secret.
pub fn new_secret() -> Zeroizing<Vec<u8>> {
    let mut secret = Zeroizing::new(vec![0u8; SECRET_LEN]);
    OsRng.fill_bytes(&mut secret);
    secret
}

/// The step that Unix time `unix_secs` falls in.
pub fn step_at(unix_secs: i64) -> i64 {
    unix_secs.div_euclid(STEP_SECS)
}

/// RFC 4226's HOTP value of `counter`: dynamic truncation of HMAC-SHA-1, [`DIGITS`] digits.
pub fn hotp(secret: &[u8], counter: u64) -> u32 {
    let mut mac =
        <Hmac<Sha1> as Mac>::new_from_slice(secret).unwrap_or_else(|_| unreachable!("HMAC takes a key of any length"));
    mac.update(&counter.to_be_bytes());
    let digest = mac.finalize().into_bytes();
    let offset = usize::from(digest[19] & 0x0f);
    let bytes = [digest[offset] & 0x7f, digest[offset + 1], digest[offset + 2], digest[offset + 3]];
    u32::from_be_bytes(bytes) % 10u32.pow(DIGITS as u32)
}

/// The code of `step`, zero-padded to [`DIGITS`].
pub fn code_at_step(secret: &[u8], step: i64) -> String {
    format!("{:0width$}", hotp(secret, u64::try_from(step).unwrap_or(0)), width = DIGITS)
}

/// `text` as a code: [`DIGITS`] ASCII digits once spaces are removed (apps show "123 456").
pub fn normalize_code(text: &str) -> Option<String> {
    let code: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    (code.len() == DIGITS && code.bytes().all(|b| b.is_ascii_digit())).then_some(code)
}

/// The step whose code `code` is, among the steps within [`SKEW_STEPS`] of `unix_secs`
/// and after `last_step`; `None` when there is none. Codes compare in constant time.
pub fn matching_step(secret: &[u8], code: &str, unix_secs: i64, last_step: Option<i64>) -> Option<i64> {
    let code = normalize_code(code)?;
    let now = step_at(unix_secs);
    let mut found = None;
    for step in now - SKEW_STEPS..=now + SKEW_STEPS {
        let matches = bool::from(code_at_step(secret, step).as_bytes().ct_eq(code.as_bytes()));
        if matches && last_step.is_none_or(|last| step > last) && found.is_none() {
            found = Some(step);
        }
    }
    found
}

/// `bytes` in RFC 4648 base32, without padding (as `otpauth://` URIs carry secrets).
pub fn base32(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(5) * 8);
    let (mut buffer, mut bits) = (0u32, 0u32);
    for &byte in bytes {
        buffer = (buffer << 8) | u32::from(byte);
        bits += 8;
        while bits >= 5 {
            bits -= 5;
            out.push(char::from(BASE32[((buffer >> bits) & 31) as usize]));
        }
    }
    if bits > 0 {
        out.push(char::from(BASE32[((buffer << (5 - bits)) & 31) as usize]));
    }
    out
}

/// The bytes of base32 `text` (case, spaces and `=` padding ignored); `None` if it is not
/// base32.
pub fn base32_decode(text: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len() * 5 / 8);
    let (mut buffer, mut bits) = (0u32, 0u32);
    for c in text.chars().filter(|c| !c.is_whitespace() && *c != '=') {
        let value = BASE32.iter().position(|&b| char::from(b) == c.to_ascii_uppercase())?;
        buffer = (buffer << 5) | value as u32;
        bits += 5;
        if bits >= 8 {
            bits -= 8;
            out.push((buffer >> bits) as u8);
        }
    }
    Some(out)
}

/// The `otpauth://` URI an authenticator app reads from a QR code: `issuer` as both the
/// label's prefix and the `issuer` parameter, the account name, the base32 secret and the
/// parameters spelled out (most apps ignore other values anyway).
pub fn otpauth_uri(issuer: &str, account: &str, secret_base32: &str) -> String {
    let (issuer, account) = (crate::percent::encode(issuer, b"@"), crate::percent::encode(account, b"@"));
    format!(
        "otpauth://totp/{issuer}:{account}?secret={secret_base32}&issuer={issuer}&algorithm=SHA1&digits={DIGITS}&period={STEP_SECS}"
    )
}

/// A fresh recovery code: 10 random base32 characters (50 bits), lower case, as two groups
/// of five (`abcde-fghij`) to read and type.
pub fn new_recovery_code() -> Zeroizing<String> {
    let mut random = Zeroizing::new([0u8; RECOVERY_CODE_CHARS]);
    OsRng.fill_bytes(random.as_mut());
    let chars: Zeroizing<Vec<char>> =
        Zeroizing::new(random.iter().map(|b| char::from(BASE32[usize::from(b & 31)].to_ascii_lowercase())).collect());
    let (first, second) = chars.split_at(RECOVERY_CODE_CHARS / 2);
    Zeroizing::new(format!("{}-{}", first.iter().collect::<String>(), second.iter().collect::<String>()))
}

/// `text` as a recovery code (spaces and dashes dropped, lower case), or `None` when it
/// cannot be one.
pub fn normalize_recovery_code(text: &str) -> Option<Zeroizing<String>> {
    let code: Zeroizing<String> = Zeroizing::new(
        text.chars().filter(|c| !c.is_whitespace() && *c != '-').map(|c| c.to_ascii_lowercase()).collect(),
    );
    let valid = code.len() == RECOVERY_CODE_CHARS && code.bytes().all(|b| BASE32.contains(&b.to_ascii_uppercase()));
    valid.then_some(code)
}

/// The stored form of a recovery code: HMAC-SHA-256 under a key derived from the secret
/// key, so that the database alone does not allow guessing codes offline.
pub fn hash_recovery_code(key: &[u8; 32], normalized: &str) -> Vec<u8> {
    let mut mac =
        <Hmac<Sha256> as Mac>::new_from_slice(key).unwrap_or_else(|_| unreachable!("HMAC takes a key of any length"));
    mac.update(normalized.as_bytes());
    mac.finalize().into_bytes().to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 6238 appendix B's SHA-1 seed: the ASCII of "12345678901234567890".
    const RFC_SEED: &[u8] = b"12345678901234567890";

    #[test]
    fn rfc_6238_sha1_test_vectors() {
        // Appendix B gives 8 digits; 6 digits are their last six (the value mod 10^6).
        let vectors = [
            (59, "94287082"),
            (1_111_111_109, "07081804"),
            (1_111_111_111, "14050471"),
            (1_234_567_890, "89005924"),
            (2_000_000_000, "69279037"),
            (20_000_000_000, "65353130"),
        ];
        for (time, eight) in vectors {
            assert_eq!(code_at_step(RFC_SEED, step_at(time)), eight[2..], "T = {time}");
        }
    }

    #[test]
    fn rfc_4226_hotp_test_vectors() {
        let values = [755224, 287082, 359152, 969429, 338314, 254676, 287922, 162583, 399871, 520489];
        for (counter, value) in values.into_iter().enumerate() {
            assert_eq!(hotp(RFC_SEED, counter as u64), value, "counter {counter}");
        }
    }

    #[test]
    fn a_code_matches_its_step_or_a_neighbour_once() {
        let now = 1_234_567_890;
        let step = step_at(now);
        let current = code_at_step(RFC_SEED, step);
        assert_eq!(matching_step(RFC_SEED, &current, now, None), Some(step));
        assert_eq!(matching_step(RFC_SEED, &format!(" {} {} ", &current[..3], &current[3..]), now, None), Some(step));
        assert_eq!(matching_step(RFC_SEED, &current, now, Some(step)), None, "used");
        let previous = code_at_step(RFC_SEED, step - 1);
        let next = code_at_step(RFC_SEED, step + 1);
        assert_eq!(matching_step(RFC_SEED, &previous, now, None), Some(step - 1));
        assert_eq!(matching_step(RFC_SEED, &next, now, Some(step)), Some(step + 1));
        assert_eq!(matching_step(RFC_SEED, &previous, now, Some(step)), None, "older than the last accepted");
        assert_eq!(matching_step(RFC_SEED, &code_at_step(RFC_SEED, step + 2), now, None), None);
        for junk in ["", "12345", "1234567", "abcdef", "12345x"] {
            assert_eq!(matching_step(RFC_SEED, junk, now, None), None, "{junk:?}");
        }
    }

    #[test]
    fn base32_round_trips_and_matches_rfc_4648() {
        assert_eq!(base32(b"foobar"), "MZXW6YTBOI");
        assert_eq!(base32(b"f"), "MY");
        assert_eq!(base32(RFC_SEED), "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ");
        assert_eq!(base32_decode("mzxw 6ytb oi======").unwrap(), b"foobar");
        let secret = new_secret();
        assert_eq!(base32_decode(&base32(&secret)).unwrap(), secret.as_slice());
        assert_eq!(base32_decode("MZ1"), None);
    }

    #[test]
    fn the_uri_names_issuer_account_and_parameters() {
        assert_eq!(
            otpauth_uri("Ferrozone", "a b+c@example.com", "MZXW6YTBOI"),
            "otpauth://totp/Ferrozone:a%20b%2Bc@example.com?secret=MZXW6YTBOI&issuer=Ferrozone\
             &algorithm=SHA1&digits=6&period=30"
        );
    }

    #[test]
    fn recovery_codes_are_random_and_read_back_however_typed() {
        let code = new_recovery_code();
        assert_eq!(code.len(), 11);
        assert_ne!(*code, *new_recovery_code());
        let normalized = normalize_recovery_code(&code.to_uppercase().replace('-', " - ")).unwrap();
        assert_eq!(*normalized, code.replace('-', ""));
        assert!(normalize_recovery_code("123456").is_none());
        assert!(normalize_recovery_code("abcde-fghi1").is_none());
        let key = [1u8; 32];
        assert_eq!(hash_recovery_code(&key, &normalized), hash_recovery_code(&key, &normalized));
        assert_ne!(hash_recovery_code(&key, &normalized), hash_recovery_code(&[2u8; 32], &normalized));
    }
}
