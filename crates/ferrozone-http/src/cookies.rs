//! The browser's cookies (session, sign-in form, provider flow), and the constant-time check
//! of the secrets a browser sends back. Their values are URL-safe base64 that the server made, so a
//! `Set-Cookie` is a fixed pattern and reading one is splitting the `Cookie` header; no
//! cookie library is needed. HMAC signing is not needed either: a session cookie holds a
//! random secret that the server looks up (by hash), so a forged value names no session;
//! the sign-in form's token carries its own MAC ([`ferrozone_domain::crypto::FormTokenKey`]).
//!
//! With an https external URL, a cookie on `Path=/` is named with the `__Host-` prefix, which
//! browsers accept only when it is `Secure`, on `/` and has no `Domain`: another host (a
//! sibling subdomain, say) cannot plant or shadow it. Read such cookies with [`get_host`].

use axum::http::header::COOKIE;
use axum::http::{HeaderMap, HeaderValue};
use subtle::ConstantTimeEq;

/// The browser session: its secret.
pub const SESSION: &str = "ferrozone_session";
/// The sign-in form's CSRF token (double submit, and signed): the same value is in the form.
pub const SIGN_IN_FORM: &str = "ferrozone_sign_in";
/// The prefix of a `Secure` cookie on `Path=/`.
pub const HOST_PREFIX: &str = "__Host-";

/// A provider sign-in in progress: its `state`, so that only the browser that started the
/// flow can finish it. Scoped to `/auth`, where the providers' callbacks are.
pub const FLOW: &str = "ferrozone_flow";
pub const FLOW_PATH: &str = "/auth";

/// How long a sign-in form's token lives, in seconds.
pub const FORM_TOKEN_SECS: u64 = 3600;

/// Whether `sent` (a CSRF token, a form token: a secret the browser sends back) is present
/// and equals `expected`, in constant time.
pub fn same_secret(sent: Option<&str>, expected: &str) -> bool {
    sent.is_some_and(|sent| !expected.is_empty() && bool::from(sent.as_bytes().ct_eq(expected.as_bytes())))
}

/// The value of the first cookie called `name` in the request's `Cookie` headers.
pub fn get<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value.trim_matches('"'))
        .filter(|value| !value.is_empty())
}

/// The value of the cookie `name` set on `Path=/` by [`set`]: `__Host-name` when `secure`.
pub fn get_host<'h>(headers: &'h HeaderMap, name: &str, secure: bool) -> Option<&'h str> {
    if secure {
        get(headers, &format!("{HOST_PREFIX}{name}"))
    } else {
        get(headers, name)
    }
}

/// `Set-Cookie` for `name=value` on `path`: HttpOnly, SameSite=Lax, living `max_age`
/// seconds, Secure when `secure` (and then named `__Host-name` when `path` is `/`). `value`
/// must be a cookie-safe token (base64url).
pub fn set(name: &str, value: &str, path: &str, max_age: u64, secure: bool) -> HeaderValue {
    let prefix = if secure && path == "/" { HOST_PREFIX } else { "" };
    let secure = if secure { "; Secure" } else { "" };
    let text = format!("{prefix}{name}={value}; Path={path}; Max-Age={max_age}; HttpOnly; SameSite=Lax{secure}");
    HeaderValue::from_str(&text).unwrap_or_else(|_| HeaderValue::from_static("invalid=; Max-Age=0"))
}

/// `Set-Cookie` that removes the cookie `name` on `path`.
pub fn clear(name: &str, path: &str, secure: bool) -> HeaderValue {
    set(name, "", path, 0, secure)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_named_cookie_and_writes_the_attributes() {
        let mut headers = HeaderMap::new();
        headers.append(COOKIE, HeaderValue::from_static("a=1; ferrozone_session=abc"));
        headers.append(COOKIE, HeaderValue::from_static("ferrozone_session=later"));
        assert_eq!(get(&headers, SESSION), Some("abc"));
        assert_eq!(get(&headers, "b"), None);
        assert_eq!(
            set(SESSION, "abc", "/", 60, true),
            "__Host-ferrozone_session=abc; Path=/; Max-Age=60; HttpOnly; SameSite=Lax; Secure"
        );
        assert_eq!(
            set(FLOW, "x", FLOW_PATH, 60, true),
            "ferrozone_flow=x; Path=/auth; Max-Age=60; HttpOnly; SameSite=Lax; Secure"
        );
        assert_eq!(get_host(&headers, SESSION, false), Some("abc"));
        assert_eq!(get_host(&headers, SESSION, true), None, "not the __Host- cookie");
        headers.append(COOKIE, HeaderValue::from_static("__Host-ferrozone_session=host"));
        assert_eq!(get_host(&headers, SESSION, true), Some("host"));
        assert_eq!(clear(SESSION, "/", false), "ferrozone_session=; Path=/; Max-Age=0; HttpOnly; SameSite=Lax");
    }
}
