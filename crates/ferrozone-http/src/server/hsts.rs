//! HTTP Strict Transport Security (RFC 6797) on every response served over HTTPS: browsers
//! that have seen it use HTTPS alone for the host until `max-age` seconds have passed, so a
//! network attacker cannot turn a later visit into plain HTTP. Subdomains are left out
//! (`includeSubDomains`): they need not be Ferrozone's to decide.
//!
//! The server adds the header itself, to whatever a TLS connection answers: the app's
//! responses and the server's own (a handler past its deadline). Plain HTTP never carries
//! it: browsers ignore it there (RFC 6797, section 8.1).

use axum::http::{header, HeaderMap, HeaderValue};

/// The policy for `max_age` seconds. A `max_age` of 0 is still sent: it tells browsers to
/// forget an earlier policy.
pub(super) fn policy(max_age: u64) -> HeaderValue {
    HeaderValue::try_from(format!("max-age={max_age}")).unwrap_or_else(|_| HeaderValue::from_static("max-age=0"))
}

/// Puts `policy` on a response's headers, in place of any the app set.
pub(super) fn insert(headers: &mut HeaderMap, policy: &HeaderValue) {
    headers.insert(header::STRICT_TRANSPORT_SECURITY, policy.clone());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_policy_names_its_age_and_zero_clears_it() {
        assert_eq!(policy(63_072_000), HeaderValue::from_static("max-age=63072000"));
        assert_eq!(policy(0), HeaderValue::from_static("max-age=0"));
    }
}
