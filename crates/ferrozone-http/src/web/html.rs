//! The server-rendered pages of the web sign-in: no JavaScript. Each page is an askama
//! template in `templates/` on the shared `layout.html`, checked at compile time, with every
//! value it shows escaped.

use askama::Template;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

/// What the sign-in page shows.
#[derive(Template)]
#[template(path = "sign_in.html")]
pub struct SignInPage<'a> {
    pub email: &'a str,
    pub return_to: &'a str,
    pub form_token: &'a str,
    pub error: Option<&'a str>,
    /// The identity providers to offer, as links that start their sign-in.
    pub providers: &'a [ProviderLink],
    /// Whether to offer the email and password form (`local_auth_enabled`).
    pub password: bool,
}

/// A link on the sign-in page that starts a provider sign-in.
pub struct ProviderLink {
    pub href: String,
    pub label: String,
}

/// A page with a message only (a refused sign-out, say), with a link back home if `back`.
#[derive(Template)]
#[template(path = "message.html")]
pub struct MessagePage<'a> {
    pub title: &'a str,
    pub text: &'a str,
    pub back: bool,
}

/// A message page with a link back home.
pub fn message<'a>(title: &'a str, text: &'a str) -> MessagePage<'a> {
    MessagePage { title, text, back: true }
}

/// For an identity provider that takes requests by HTTP-POST only: a form that posts
/// `fields` to `url` when the person presses its button.
#[derive(Template)]
#[template(path = "post_to_provider.html")]
pub struct PostToProvider<'a> {
    pub label: &'a str,
    pub url: &'a str,
    pub fields: &'a [(String, String)],
}

/// `page` as an HTML response (see [`empty`] for its headers).
pub fn response(status: StatusCode, page: impl Template) -> Response {
    match page.render() {
        Ok(html) => with_headers(status, html),
        Err(e) => {
            tracing::error!(error = %e, "a page could not be rendered");
            with_headers(StatusCode::INTERNAL_SERVER_ERROR, String::new())
        }
    }
}

/// An HTML response without a body (a redirect, say) that no cache keeps and no other site
/// may frame, with no scripts.
pub fn empty(status: StatusCode) -> Response {
    with_headers(status, String::new())
}

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

fn with_headers(status: StatusCode, html: String) -> Response {
    let mut response = (status, html).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("same-origin"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_escape_markup_and_quotes() {
        let providers = [ProviderLink { href: "/auth/oidc/x?return_to=%2F".into(), label: "<i>Corp</i>".into() }];
        let page = SignInPage {
            email: "\"><script>",
            return_to: "/'x",
            form_token: "t",
            error: Some("<b>"),
            providers: &providers,
            password: true,
        }
        .render()
        .unwrap();
        assert!(!page.contains("<script>") && !page.contains("<b>") && !page.contains("/'x"), "{page}");
        assert!(!page.contains("<i>"), "{page}");
        assert!(
            page.contains("<a class=\"button secondary\" href=\"/auth/oidc/x?return_to=%2F\">Sign in with "),
            "{page}"
        );
        let fields = [("a\"b".to_owned(), "<v>".to_owned())];
        let post = PostToProvider { label: "<L>", url: "https://idp.example/\"x", fields: &fields }.render().unwrap();
        assert!(!post.contains("<L>") && !post.contains("\"x") && !post.contains("<v>") && !post.contains("a\"b"));
    }

    #[test]
    fn pages_share_the_layout() {
        let page = message("Gone & back", "Text").render().unwrap();
        assert!(page.starts_with("<!DOCTYPE html>\n<html lang=\"en\">\n"), "{page}");
        assert!(page.contains("<title>Gone &#38; back · Ferrozone</title>"), "{page}");
        assert!(page.contains("<h1>Gone &#38; back</h1>\n<p>Text</p>\n<p><a href=\"/\">Back</a></p>\n"), "{page}");
        assert!(page.ends_with("</body>\n</html>"), "{page}");
        let css = format!("<link rel=\"stylesheet\" href=\"{}\">", crate::web::assets::url("app.css"));
        assert!(page.contains(&css), "{page}");
        assert!(
            page.contains("<a class=\"skip-link\" href=\"#main\">") && page.contains("<main id=\"main\""),
            "{page}"
        );
        assert!(!page.contains("style=") && !page.contains("<style") && !page.contains("<script"), "{page}");
    }

    #[test]
    fn a_page_posting_to_a_provider_may_post_there_only() {
        let csp = csp_posting_to("https://idp.example");
        assert!(csp.contains("form-action https://idp.example;") && !csp.contains("'self';  "), "{csp}");
        assert_eq!(csp.replace("form-action https://idp.example", "form-action 'self'"), CSP);
    }
}
