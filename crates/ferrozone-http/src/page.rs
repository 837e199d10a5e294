//! The headers of every HTML response, whether a page or a redirect: no cache keeps it, no
//! other site frames it, and its Content Security Policy allows this site's own scripts,
//! stylesheets and images only. The pages themselves belong to the browser face.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

/// The pages' Content Security Policy: their own scripts, stylesheets and images (and
/// `data:` images) only, scripts calling this site only (`/v0`), forms posting to this
/// site only, no `<base>`, no framing.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
                       connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

/// [`CSP`] with forms allowed to post to `origin` instead of this site (a page whose form
/// posts to an identity provider). `origin` must hold no space, `;`, `,` or quote.
pub fn csp_posting_to(origin: &str) -> String {
    CSP.replace("form-action 'self'", &format!("form-action {origin}"))
}

/// `html` as a response with the headers of every page.
pub fn html(status: StatusCode, html: String) -> Response {
    let mut response = (status, html).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("same-origin"));
    response
}

/// An HTML response without a body (a redirect, say) that no cache keeps and no other site
/// may frame, with no scripts.
pub fn empty(status: StatusCode) -> Response {
    html(status, String::new())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_posting_to_a_provider_may_post_there_only() {
        let csp = csp_posting_to("https://idp.example");
        assert!(csp.contains("form-action https://idp.example;") && !csp.contains("'self';  "), "{csp}");
        assert_eq!(csp.replace("form-action https://idp.example", "form-action 'self'"), CSP);
    }
}
