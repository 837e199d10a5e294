//! Percent-encoding (RFC 3986) for the few places that build a URL or header by hand.

use std::fmt::Write;

/// `text` with RFC 3986's unreserved characters (letters, digits, `-._~`) and the bytes of
/// `also_kept` as they are, and every other byte as `%XX`.
pub fn encode(text: &str, also_kept: &[u8]) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) || also_kept.contains(&byte) {
            out.push(char::from(byte));
        } else {
            let _ = write!(out, "%{byte:02X}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn only_unreserved_and_the_kept_bytes_stay() {
        assert_eq!(super::encode("a b@c~é", b""), "a%20b%40c~%C3%A9");
        assert_eq!(super::encode("a b@c", b"@"), "a%20b@c");
    }
}
