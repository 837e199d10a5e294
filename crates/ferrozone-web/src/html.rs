//! The server-rendered pages of the web sign-in: no JavaScript. Each page is an askama
//! template in `templates/` on the shared `layout.html`, checked at compile time, with every
//! value it shows escaped.

use askama::Template;
use axum::http::StatusCode;
use axum::response::Response;

use ferrozone_http::page;
pub use ferrozone_http::page::{csp_posting_to, empty};

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
    /// Whether to offer a sign-in link by email instead ([`ferrozone_domain::Domain::magic_links_enabled`]).
    pub magic_link: bool,
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

/// `page` as an HTML response, with the headers of every page ([`ferrozone_http::page`]).
pub fn response(status: StatusCode, page: impl Template) -> Response {
    match page.render() {
        Ok(html) => page::html(status, html),
        Err(e) => {
            tracing::error!(error = %e, "a page could not be rendered");
            page::empty(StatusCode::INTERNAL_SERVER_ERROR)
        }
    }
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
            magic_link: false,
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
        let css = format!("<link rel=\"stylesheet\" href=\"{}\">", crate::assets::url("app.css"));
        assert!(page.contains(&css), "{page}");
        assert!(
            page.contains("<a class=\"skip-link\" href=\"#main\">") && page.contains("<main id=\"main\""),
            "{page}"
        );
        assert!(!page.contains("style=") && !page.contains("<style") && !page.contains("<script"), "{page}");
    }
}
