//! The web sign-in (docs/design/sign-in.md, "Sign-in and sessions"): the page, password
//! sign-in, its refusals and redirects. Sessions calling `/v0` are in `signin/sessions.rs`.

mod flood;
mod local_auth;
mod pages;
mod passwords;
mod providers;
mod saml;
mod sessions;
mod throttle;

use std::net::SocketAddr;

use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{Method, Request, StatusCode};
use axum::Router;
use ferrozone_http::AppState;

pub use crate::helpers::{password_user, PASSWORD};
use crate::helpers::{send, send_any, TestApp, TestResponse, HTML_UTF8};

/// The `Accept` header Chromium sends on a navigation.
pub const NAVIGATION_ACCEPT: &str =
    "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8";

/// A client of the web pages: one address, and the cookies it was given (by their names
/// without the `__Host-` prefix, which it sends back when it was given it).
pub struct Browser {
    pub router: Router,
    pub address: SocketAddr,
    pub form_cookie: Option<String>,
    pub session: Option<String>,
    /// A password sign-in waiting for its code.
    pub pending: Option<String>,
    pub host_prefix: bool,
    /// Accept a 5xx answer (for tests of failures).
    pub allow_5xx: bool,
}

impl Browser {
    pub fn new(app: &TestApp) -> Self {
        Self::on(app.router.clone(), "192.0.2.10:40000")
    }

    pub fn on(router: Router, address: &str) -> Self {
        Self {
            router,
            address: address.parse().unwrap(),
            form_cookie: None,
            session: None,
            pending: None,
            host_prefix: false,
            allow_5xx: false,
        }
    }

    /// Sends `req` with this browser's cookies and address; keeps the cookies it is given.
    pub async fn send(&mut self, req: axum::http::request::Builder, body: Body) -> TestResponse {
        let mut cookies = Vec::new();
        let prefix = if self.host_prefix { "__Host-" } else { "" };
        if let Some(token) = &self.form_cookie {
            cookies.push(format!("{prefix}ferrozone_sign_in={token}"));
        }
        if let Some(secret) = &self.session {
            cookies.push(format!("{prefix}ferrozone_session={secret}"));
        }
        if let Some(token) = &self.pending {
            cookies.push(format!("{prefix}ferrozone_pending_sign_in={token}"));
        }
        let mut req = req.extension(ConnectInfo(self.address));
        if !cookies.is_empty() {
            req = req.header("cookie", cookies.join("; "));
        }
        let req = req.body(body).unwrap();
        let res = if self.allow_5xx {
            send_any(self.router.clone(), req).await
        } else {
            send(self.router.clone(), req).await
        };
        for (name, value) in set_cookies(&res) {
            let unprefixed = name.strip_prefix("__Host-");
            self.host_prefix |= unprefixed.is_some();
            match unprefixed.unwrap_or(&name) {
                "ferrozone_sign_in" => self.form_cookie = Some(value).filter(|v| !v.is_empty()),
                "ferrozone_session" => self.session = Some(value).filter(|v| !v.is_empty()),
                "ferrozone_pending_sign_in" => self.pending = Some(value).filter(|v| !v.is_empty()),
                _ => {}
            }
        }
        res
    }

    pub async fn get(&mut self, path: &str) -> TestResponse {
        self.send(Request::builder().method(Method::GET).uri(path), Body::empty()).await
    }

    /// A navigation: a `GET` asking for a page, as a browser's address bar or a link does.
    pub async fn navigate(&mut self, path: &str) -> TestResponse {
        let req = Request::builder().method(Method::GET).uri(path).header("accept", NAVIGATION_ACCEPT);
        self.send(req, Body::empty()).await
    }

    /// `GET /sign_in`, then `POST /sign_in` with the form's token.
    pub async fn sign_in(&mut self, email: &str, password: &str, return_to: &str) -> TestResponse {
        let page = self.get("/sign_in").await;
        page.expect_status(StatusCode::OK);
        let token = self.form_cookie.clone().expect("a form cookie");
        self.post_form(
            "/sign_in",
            &[("email", email), ("password", password), ("return_to", return_to), ("csrf_token", &token)],
        )
        .await
    }

    pub async fn post_form(&mut self, path: &str, fields: &[(&str, &str)]) -> TestResponse {
        let body = form_urlencoded::Serializer::new(String::new()).extend_pairs(fields).finish();
        let req = Request::builder()
            .method(Method::POST)
            .uri(path)
            .header("content-type", "application/x-www-form-urlencoded");
        self.send(req, Body::from(body)).await
    }

    /// The session's CSRF token, from the `<meta>` tag of `GET /`.
    pub async fn csrf_token(&mut self) -> String {
        let home = self.get("/").await;
        home.expect_status(StatusCode::OK);
        attribute_after(&text(&home), "<meta name=\"csrf-token\" content=\"")
    }
}

/// The `Set-Cookie` headers of `res`, as (name, value).
pub fn set_cookies(res: &TestResponse) -> Vec<(String, String)> {
    res.headers
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .filter_map(|v| v.split(';').next()?.split_once('=').map(|(n, v)| (n.to_owned(), v.to_owned())))
        .collect()
}

/// The full `Set-Cookie` header for cookie `name`.
pub fn set_cookie_header(res: &TestResponse, name: &str) -> String {
    let prefix = format!("{name}=");
    res.headers
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|v| v.starts_with(&prefix))
        .unwrap_or_else(|| panic!("no {name} cookie"))
        .to_owned()
}

pub fn text(res: &TestResponse) -> String {
    assert_eq!(res.header("content-type"), Some(HTML_UTF8));
    String::from_utf8(res.raw.clone()).unwrap()
}

/// The quoted value that follows `marker` in `html`.
pub fn attribute_after(html: &str, marker: &str) -> String {
    let start = html.find(marker).unwrap_or_else(|| panic!("no {marker} in {html}")) + marker.len();
    html[start..].split('"').next().unwrap().to_owned()
}

#[tokio::test]
async fn the_page_has_a_form_with_a_csrf_field_bound_to_a_cookie() {
    let app = TestApp::new().await;
    let mut browser = Browser::new(&app);
    let res = browser.get("/sign_in?return_to=%22%3E%3Cscript%3E").await;
    res.expect_status(StatusCode::OK);
    let html = text(&res);
    let field = attribute_after(&html, "name=\"csrf_token\" value=\"");
    assert_eq!(Some(field), browser.form_cookie, "the form's token is the cookie's");
    assert!(html.contains("name=\"password\"") && !html.contains("<script"), "{html}");
    assert_eq!(res.header("cache-control"), Some("no-store"));
    let cookie = set_cookie_header(&res, "ferrozone_sign_in");
    assert!(cookie.contains("HttpOnly") && cookie.contains("SameSite=Lax"), "{cookie}");
}

#[tokio::test]
async fn a_password_user_signs_in_with_a_session_cookie_and_last_signed_in_set() {
    let app = TestApp::new().await;
    let id = password_user(&app, "pat@example.com", "unprivileged").await;
    let mut browser = Browser::new(&app);
    let res = browser.sign_in("Pat@Example.com", PASSWORD, "/devices?x=1").await;
    res.expect_status(StatusCode::SEE_OTHER);
    assert_eq!(res.header("location"), Some("/devices?x=1"));
    let cookie = set_cookie_header(&res, "ferrozone_session");
    for attribute in ["HttpOnly", "SameSite=Lax", "Path=/;", "Max-Age=86400"] {
        assert!(cookie.contains(attribute), "{attribute} in {cookie}");
    }
    assert!(!cookie.contains("Secure"), "http external URL: {cookie}");
    assert!(browser.session.is_some());
    let user = app.show_user(&id).await;
    assert_eq!(user["last_signed_in_method"], "password");
    crate::helpers::assert_timestamp(&user["last_signed_in_at"]);
    assert_eq!(user["updated_at"], user["inserted_at"], "signing in is not an edit");
}

#[tokio::test]
async fn cookies_are_secure_with_an_https_external_url() {
    let app = TestApp::new().await;
    password_user(&app, "pat@example.com", "unprivileged").await;
    let mut browser = Browser::on(crate::helpers::app(AppState::new(app.domain.clone(), true)), "192.0.2.10:1");
    let page = browser.get("/sign_in").await;
    let form = set_cookie_header(&page, "__Host-ferrozone_sign_in");
    assert!(form.contains("; Path=/;") && form.ends_with("; Secure"), "{form}");
    let res = browser.sign_in("pat@example.com", PASSWORD, "").await;
    res.expect_status(StatusCode::SEE_OTHER);
    let session = set_cookie_header(&res, "__Host-ferrozone_session");
    assert!(session.contains("; Path=/;") && session.ends_with("; Secure"), "{session}");
    assert!(set_cookies(&res).iter().all(|(name, _)| name.starts_with("__Host-")), "no unprefixed cookie");
    browser.get("/").await.expect_status(StatusCode::OK);
    browser.host_prefix = false;
    let res = browser.get("/").await;
    assert_eq!(res.header("location"), Some("/sign_in"), "an unprefixed session cookie is not read over https");
}

#[tokio::test]
async fn every_refusal_is_the_same_401_page() {
    let app = TestApp::new().await;
    password_user(&app, "pat@example.com", "admin").await;
    password_user(&app, "off@example.com", "unprivileged").await;
    app.domain.set_user_disabled(&ferrozone_domain::Principal::operator(), "off@example.com", true).await.unwrap();
    app.user("nopass@example.com", "unprivileged").await;
    let cases = [
        ("pat@example.com", "wrong password entirely"),
        ("nobody@example.com", PASSWORD),
        ("nopass@example.com", PASSWORD),
        ("nopass@example.com", ""),
        ("off@example.com", PASSWORD),
        ("", ""),
    ];
    let mut pages = Vec::new();
    for (i, (email, password)) in cases.into_iter().enumerate() {
        let mut browser = Browser::on(app.router.clone(), &format!("192.0.2.{}:1", i + 1));
        let res = browser.sign_in(email, password, "").await;
        res.expect_status(StatusCode::UNAUTHORIZED);
        assert!(set_cookies(&res).iter().all(|(name, _)| name != "ferrozone_session"), "no session");
        let html = text(&res);
        let token = attribute_after(&html, "name=\"csrf_token\" value=\"");
        let echoed = format!("value=\"{email}\" autocomplete");
        pages.push(html.replace(&token, "TOKEN").replace(&echoed, "value=\"EMAIL\" autocomplete"));
    }
    assert!(pages.iter().all(|page| page == &pages[0]), "{pages:#?}");
    assert!(pages[0].contains("The email or password is incorrect"));
}

#[tokio::test]
async fn a_sign_in_without_the_form_token_is_refused() {
    let app = TestApp::new().await;
    password_user(&app, "pat@example.com", "admin").await;
    let mut browser = Browser::new(&app);
    browser.get("/sign_in").await;
    let fields = [("email", "pat@example.com"), ("password", PASSWORD), ("csrf_token", "forged")];
    browser.post_form("/sign_in", &fields).await.expect_status(StatusCode::FORBIDDEN);
    browser.form_cookie = None;
    browser.post_form("/sign_in", &fields[..2]).await.expect_status(StatusCode::FORBIDDEN);
    assert!(browser.session.is_none());
}

#[tokio::test]
async fn a_planted_pair_of_matching_self_made_tokens_is_refused() {
    let app = TestApp::new().await;
    password_user(&app, "pat@example.com", "admin").await;
    let other = TestApp::new().await;
    let mut elsewhere = Browser::new(&other);
    elsewhere.get("/sign_in").await.expect_status(StatusCode::OK);
    let foreign = elsewhere.form_cookie.clone().unwrap();
    let self_made = "A".repeat(43);
    for planted in [self_made.as_str(), &foreign, "forged"] {
        let mut browser = Browser::new(&app);
        browser.form_cookie = Some(planted.to_owned());
        let fields = [("email", "pat@example.com"), ("password", PASSWORD), ("csrf_token", planted)];
        let res = browser.post_form("/sign_in", &fields).await;
        res.expect_status(StatusCode::FORBIDDEN);
        assert!(browser.session.is_none(), "{planted}");
    }
    let mut browser = Browser::new(&app);
    browser.sign_in("pat@example.com", PASSWORD, "").await.expect_status(StatusCode::SEE_OTHER);
}

#[tokio::test]
async fn return_to_only_ever_leads_to_a_local_path() {
    let app = TestApp::new().await;
    password_user(&app, "pat@example.com", "admin").await;
    for (i, target) in
        ["//evil.example", "https://evil.example", "/\\evil", "evil.example", "/\t/evil"].iter().enumerate()
    {
        let mut browser = Browser::on(app.router.clone(), &format!("198.51.100.{}:1", i + 1));
        let res = browser.sign_in("pat@example.com", PASSWORD, target).await;
        res.expect_status(StatusCode::SEE_OTHER);
        assert_eq!(res.header("location"), Some("/"), "{target:?}");
    }
}

#[tokio::test]
async fn repeated_failures_are_throttled_even_with_the_right_password() {
    let app = TestApp::new().await;
    password_user(&app, "pat@example.com", "admin").await;
    let mut browser = Browser::new(&app);
    for _ in 0..5 {
        browser.sign_in("pat@example.com", "wrong password entirely", "").await.expect_status(StatusCode::UNAUTHORIZED);
    }
    let res = browser.sign_in("pat@example.com", PASSWORD, "").await;
    res.expect_status(StatusCode::TOO_MANY_REQUESTS);
    assert!(res.header("retry-after").is_some());
    assert!(browser.session.is_none());
    let mut elsewhere = Browser::on(app.router.clone(), "203.0.113.7:1");
    elsewhere.sign_in("pat@example.com", PASSWORD, "").await.expect_status(StatusCode::SEE_OTHER);
}
