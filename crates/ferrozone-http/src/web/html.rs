//! The server-rendered pages of the web sign-in: no JavaScript, and every value they show
//! escaped.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

/// `text` with the five characters that matter in HTML text and attribute values escaped.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#x27;"),
            c => out.push(c),
        }
    }
    out
}

/// What the sign-in page shows.
pub struct SignInPage<'a> {
    pub email: &'a str,
    pub return_to: &'a str,
    pub form_token: &'a str,
    pub error: Option<&'a str>,
    /// The identity providers to offer, as links that start their sign-in.
    pub providers: &'a [ProviderLink],
}

/// A link on the sign-in page that starts a provider sign-in.
pub struct ProviderLink {
    pub href: String,
    pub label: String,
}

impl SignInPage<'_> {
    pub fn render(&self) -> String {
        let error = self.error.map(|e| format!("<p class=\"error\" role=\"alert\">{}</p>\n", escape(e)));
        let providers = if self.providers.is_empty() {
            String::new()
        } else {
            let links: String = self
                .providers
                .iter()
                .map(|p| format!("<li><a href=\"{}\">Sign in with {}</a></li>\n", escape(&p.href), escape(&p.label)))
                .collect();
            format!("<ul class=\"providers\">\n{links}</ul>\n<p>Or with your email and password:</p>\n")
        };
        let body = format!(
            "<h1>Sign in</h1>\n{error}{providers}<form method=\"post\" action=\"/sign_in\">\n\
             <input type=\"hidden\" name=\"csrf_token\" value=\"{token}\">\n\
             <input type=\"hidden\" name=\"return_to\" value=\"{return_to}\">\n\
             <label>Email <input type=\"email\" name=\"email\" value=\"{email}\" autocomplete=\"username\" required autofocus></label>\n\
             <label>Password <input type=\"password\" name=\"password\" autocomplete=\"current-password\" required></label>\n\
             <button type=\"submit\">Sign in</button>\n</form>\n",
            error = error.unwrap_or_default(),
            token = escape(self.form_token),
            return_to = escape(self.return_to),
            email = escape(self.email),
        );
        document("Sign in", "", &body)
    }
}

/// The page of a signed-in user: who it is, the session's CSRF token in a `<meta>` tag for
/// scripts calling `/v0`, and a sign-out button.
pub fn home(email: &str, role: &str, csrf_token: &str) -> String {
    let head = format!("<meta name=\"csrf-token\" content=\"{}\">\n", escape(csrf_token));
    let body = format!(
        "<h1>Ferrozone</h1>\n<p>Signed in as <strong>{email}</strong> ({role}).</p>\n\
         <form method=\"post\" action=\"/sign_out\">\n\
         <input type=\"hidden\" name=\"csrf_token\" value=\"{token}\">\n\
         <button type=\"submit\">Sign out</button>\n</form>\n",
        email = escape(email),
        role = escape(role),
        token = escape(csrf_token),
    );
    document("Ferrozone", &head, &body)
}

/// A page with a message only (a refused sign-out, say).
pub fn message(title: &str, text: &str) -> String {
    document(
        title,
        "",
        &format!("<h1>{}</h1>\n<p>{}</p>\n<p><a href=\"/\">Back</a></p>\n", escape(title), escape(text)),
    )
}

pub fn document(title: &str, head: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n{head}\
         <title>{title} · Ferrozone</title>\n</head>\n<body>\n{body}</body>\n</html>\n",
        title = escape(title),
    )
}

/// An HTML response that no cache keeps and no other site may frame, with no scripts.
pub fn response(status: StatusCode, html: String) -> Response {
    let mut response = (status, html).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static("default-src 'none'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("same-origin"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_and_quotes() {
        assert_eq!(escape(r#"<a href="x">'&'</a>"#), "&lt;a href=&quot;x&quot;&gt;&#x27;&amp;&#x27;&lt;/a&gt;");
        let providers = [ProviderLink { href: "/auth/oidc/x?return_to=%2F".into(), label: "<i>Corp</i>".into() }];
        let page = SignInPage {
            email: "\"><script>",
            return_to: "/'x",
            form_token: "t",
            error: Some("<b>"),
            providers: &providers,
        }
        .render();
        assert!(!page.contains("<script>") && !page.contains("<b>") && !page.contains("/'x"), "{page}");
        assert!(
            page.contains("<a href=\"/auth/oidc/x?return_to=%2F\">Sign in with &lt;i&gt;Corp&lt;/i&gt;</a>"),
            "{page}"
        );
    }
}
