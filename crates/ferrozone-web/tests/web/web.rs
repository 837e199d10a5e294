//! The pages' foundation: hashed, immutable assets and the security headers of every page.

use axum::http::{Method, StatusCode};

use crate::helpers::{TestApp, TestResponse};
use crate::signin::{attribute_after, password_user, text, Browser, PASSWORD};

const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
                   connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

/// The hashed paths of the stylesheet and the logo, as the sign-in page links them.
async fn asset_paths(app: &TestApp) -> (String, String) {
    let html = text(&Browser::new(app).get("/sign_in").await);
    let css = attribute_after(&html, "<link rel=\"stylesheet\" href=\"");
    let logo = attribute_after(&html, "<link rel=\"icon\" href=\"");
    (css, logo)
}

fn expect_asset(res: &TestResponse, content_type: &str, bytes: &[u8]) {
    res.expect_status(StatusCode::OK);
    assert_eq!(res.header("content-type"), Some(content_type));
    assert_eq!(res.header("cache-control"), Some("public, max-age=31536000, immutable"));
    assert_eq!(res.header("x-content-type-options"), Some("nosniff"));
    assert_eq!(res.raw, bytes);
}

#[tokio::test]
async fn pages_link_assets_by_content_hash_and_they_are_served_immutable() {
    let app = TestApp::new().await;
    let (css, logo) = asset_paths(&app).await;
    let hash = |path: &str| path.split('.').nth(1).unwrap().to_owned();
    assert!(css.starts_with("/assets/app.") && css.ends_with(".css"), "{css}");
    assert!(logo.starts_with("/assets/logo.") && logo.ends_with(".svg"), "{logo}");
    for path in [&css, &logo] {
        assert!(hash(path).len() == 10 && hash(path).bytes().all(|b| b.is_ascii_hexdigit()), "{path}");
    }
    let res = app.raw(Method::GET, &css, &[], "").await;
    expect_asset(&res, "text/css; charset=utf-8", include_bytes!("../../assets/app.css"));
    let res = app.raw(Method::GET, &logo, &[], "").await;
    expect_asset(&res, "image/svg+xml", include_bytes!("../../assets/logo.svg"));
}

#[tokio::test]
async fn unknown_and_stale_asset_names_are_not_found() {
    let app = TestApp::new().await;
    let (css, _) = asset_paths(&app).await;
    let stale = css.replace(&css[12..22], "0123456789");
    assert_ne!(stale, css);
    for path in
        [stale.as_str(), "/assets/app.css", "/assets/nothing.0123456789.css", "/assets/", "/assets/..%2fCargo.toml"]
    {
        app.raw(Method::GET, path, &[], "").await.expect_not_found();
    }
}

pub fn expect_security_headers(res: &TestResponse, what: &str) {
    assert_eq!(res.header("content-security-policy"), Some(CSP), "{what}");
    assert_eq!(res.header("x-frame-options"), Some("DENY"), "{what}");
    assert_eq!(res.header("referrer-policy"), Some("same-origin"), "{what}");
    assert_eq!(res.header("cache-control"), Some("no-store"), "{what}");
}

#[tokio::test]
async fn every_page_has_the_security_headers_and_no_inline_script_or_style() {
    let app = TestApp::new().await;
    password_user(&app, "pat@example.com", "unprivileged").await;
    let mut browser = Browser::new(&app);
    let redirect = browser.get("/").await;
    expect_security_headers(&redirect, "the redirect of an anonymous visit");
    let sign_in = browser.get("/sign_in").await;
    let refused = browser.sign_in("pat@example.com", "wrong password!", "/").await;
    browser.sign_in("pat@example.com", PASSWORD, "/").await.expect_status(StatusCode::SEE_OTHER);
    let home = browser.get("/").await;
    let not_signed_out = browser.post_form("/sign_out", &[("csrf_token", "forged")]).await;
    for (res, what) in [(&sign_in, "sign-in"), (&refused, "refused"), (&home, "home"), (&not_signed_out, "message")] {
        expect_security_headers(res, what);
        let html = text(res);
        // Scripts only from files: every `<script` is a module with a `src`.
        let scripts = html.matches("<script").count();
        assert_eq!(scripts, html.matches("<script type=\"module\" src=\"/assets/").count(), "{what}: {html}");
        assert!(!html.contains("<style") && !html.contains(" style="), "{what}: {html}");
        assert!(html.contains("<main id=\"main\"") && html.contains("href=\"#main\""), "{what}: {html}");
    }
    assert_eq!(not_signed_out.status, StatusCode::FORBIDDEN);
}

/// docs/web.md, "Unknown pages": a browser on a path no page has gets the HTML page saying
/// so, signed in or not; under `/v0` (the API's contract) and `/assets` the JSON 404 stays,
/// and so does a script's request anywhere (one that does not ask for `text/html`).
#[tokio::test]
async fn an_unknown_page_is_the_html_not_found_page_and_the_api_keeps_its_json() {
    let app = TestApp::new().await;
    password_user(&app, "pat@example.com", "unprivileged").await;
    let mut anonymous = Browser::new(&app);
    let mut signed_in = Browser::new(&app);
    signed_in.sign_in("pat@example.com", PASSWORD, "/").await.expect_status(StatusCode::SEE_OTHER);
    for path in ["/no-such-page", "/admin/nothing", "/account/nowhere", "/devices/new/more", "/v0users", "/assetsx"] {
        for (browser, who) in [(&mut anonymous, "anonymous"), (&mut signed_in, "signed in")] {
            let res = browser.navigate(path).await;
            let what = format!("{path} ({who})");
            res.expect_status(StatusCode::NOT_FOUND);
            assert_eq!(res.header("content-type"), Some("text/html; charset=utf-8"), "{what}");
            expect_security_headers(&res, &what);
            let html = text(&res);
            assert!(html.contains("<h1>Not found</h1>") && html.contains("There is no such page."), "{what}: {html}");
        }
    }
    for path in ["/v0", "/v0/", "/v0/nothing", "/v0/users/x/y/z", "/assets", "/assets/"] {
        app.raw(Method::GET, path, &[], "").await.expect_not_found();
        anonymous.navigate(path).await.expect_not_found();
    }
    for path in ["/no-such-page", "/V0/devices", "/metrics"] {
        app.raw(Method::GET, path, &[], "").await.expect_not_found();
        app.raw(Method::GET, path, &[("accept", "application/json")], "").await.expect_not_found();
    }
}
