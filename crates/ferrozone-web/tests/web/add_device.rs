//! The page adding a device (docs/web.md, "Adding a device"): `GET /devices/new` and
//! `POST /devices/new`, with the key made by the server, pasted, or made in the browser.

use axum::http::StatusCode;
use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use ferrozone_domain::crypto::public_key_of;
use ferrozone_domain::rules::LIMIT_REACHED;
use ferrozone_domain::service::device_rights::MANAGEMENT_OFF;
use serde_json::{json, Value};

use crate::helpers::decode_qr;
use crate::helpers::{key, TestApp, TestResponse};
use crate::signin::{attribute_after, password_user, text, Browser, PASSWORD};
use crate::web::expect_security_headers;

async fn signed_in(app: &TestApp, email: &str, role: &str) -> (String, Browser) {
    let id = password_user(app, email, role).await;
    let mut browser = Browser::new(app);
    browser.sign_in(email, PASSWORD, "/").await.expect_status(StatusCode::SEE_OTHER);
    (id, browser)
}

/// Posts the form with the session's CSRF token and `fields`.
async fn add(browser: &mut Browser, fields: &[(&str, &str)]) -> TestResponse {
    let token = browser.csrf_token().await;
    let mut all = vec![("csrf_token", token.as_str())];
    all.extend_from_slice(fields);
    browser.post_form("/devices/new", &all).await
}

/// The devices of user `id`, as the API shows them.
async fn devices_of(app: &TestApp, id: &str) -> Vec<Value> {
    app.list(&format!("/v0/devices?user_id={id}")).await
}

/// The text of the page's `<pre id="config">`, unescaped.
fn config_text(html: &str) -> String {
    let start = html.find("<pre id=\"config\"").expect("a configuration");
    let body = &html[start..];
    let body = &body[body.find('>').unwrap() + 1..body.find("</pre>").unwrap()];
    unescape(body)
}

fn unescape(html: &str) -> String {
    html.replace("&#60;", "<").replace("&#62;", ">").replace("&#34;", "\"").replace("&#39;", "'").replace("&#38;", "&")
}

/// The value of the `key = value` line of `config`.
fn line<'a>(config: &'a str, key: &str) -> &'a str {
    let prefix = format!("{key} = ");
    config.lines().find_map(|l| l.strip_prefix(&prefix)).unwrap_or_else(|| panic!("no {key} in {config}"))
}

/// The configuration the page's download link carries (a `data:` URL, base64).
fn download(html: &str) -> String {
    let href = attribute_after(html, "id=\"download-config\" href=\"");
    let encoded = href.strip_prefix("data:text/plain;charset=utf-8;base64,").expect("a data: URL");
    String::from_utf8(STANDARD.decode(encoded).unwrap()).unwrap()
}

#[tokio::test]
async fn the_form_suggests_a_name_and_offers_the_server_key_until_the_script_says_otherwise() {
    let app = TestApp::new().await;
    let (_, mut browser) = signed_in(&app, "pat@example.com", "unprivileged").await;
    let res = browser.get("/devices/new").await;
    res.expect_status(StatusCode::OK);
    expect_security_headers(&res, "the form");
    let html = text(&res);
    let name = attribute_after(&html, "name=\"name\" value=\"");
    let (adjective, noun) = name.split_once('-').expect("adjective-noun");
    assert!(!adjective.is_empty() && !noun.is_empty(), "{name}");
    assert!(html.contains(&format!("name=\"csrf_token\" value=\"{}\"", browser.csrf_token().await)), "{html}");
    assert!(html.contains("value=\"browser\" id=\"mode-browser\" disabled>"), "{html}");
    assert!(html.contains("value=\"server\" id=\"mode-server\" checked>"), "{html}");
    assert!(html.contains("value=\"own\" id=\"mode-own\">"), "{html}");
    assert!(html.contains("<label for=\"public-key\""), "{html}");
    let script = script_src("add-device.js", &html);
    assert_eq!(html.matches("<script").count(), 1, "one script: {script}");
    assert!(!html.contains(" style=") && !html.contains("<style"), "{html}");
    let served = browser.get(&script).await;
    served.expect_status(StatusCode::OK);
    assert_eq!(served.header("content-type"), Some("text/javascript; charset=utf-8"));

    let mut anonymous = Browser::new(&app);
    let res = anonymous.get("/devices/new").await;
    assert_eq!(res.header("location"), Some("/sign_in?return_to=%2Fdevices%2Fnew"));
}

/// The `src` of the page's script named `name` (`/assets/<stem>.<hash>.js`).
fn script_src(name: &str, html: &str) -> String {
    let src = attribute_after(html, "<script type=\"module\" src=\"");
    let stem = name.trim_end_matches(".js");
    assert!(src.starts_with(&format!("/assets/{stem}.")) && src.ends_with(".js"), "{src}");
    src
}

#[tokio::test]
async fn a_server_key_is_shown_once_in_the_configuration_its_qr_code_and_its_download() {
    let app = TestApp::new().await;
    let (id, mut browser) = signed_in(&app, "pat@example.com", "unprivileged").await;
    let fields = [("name", "Pat's laptop"), ("description", "at home"), ("key_mode", "server")];
    let res = add(&mut browser, &fields).await;
    res.expect_status(StatusCode::CREATED);
    expect_security_headers(&res, "the configuration page");
    let html = text(&res);
    assert!(!html.contains(" style=") && !html.contains("<style"), "{html}");
    let devices = devices_of(&app, &id).await;
    assert_eq!(devices.len(), 1);
    let device = &devices[0];
    assert_eq!((device["name"].as_str(), device["description"].as_str()), (Some("Pat's laptop"), Some("at home")));

    let config = config_text(&html);
    let private_key = line(&config, "PrivateKey");
    assert_eq!(public_key_of(private_key).as_deref(), device["public_key"].as_str(), "the key pair's");
    assert_eq!(line(&config, "PublicKey"), app.domain.server_public_key());
    assert!(html.contains("shown only this once"), "{html}");
    assert!(html.contains(&format!("href=\"/devices/{}\"", device["id"].as_str().unwrap())), "{html}");
    assert_eq!(download(&html), config);
    assert!(html.contains("download=\"Pat-s-laptop.conf\""), "{html}");
    // The page, its stylesheet, logo and script stay within 150 KB, the QR code included.
    assert!(html.len() < 100_000, "{} bytes", html.len());
    let qr = attribute_after(&html, "id=\"qr\" src=\"data:image/png;base64,");
    assert_eq!(decode_qr(&STANDARD.decode(qr).unwrap()), config);

    let stored = app.get(&format!("/v0/devices/{}/config", device["id"].as_str().unwrap()), &app.admin).await;
    let stored = String::from_utf8(stored.raw).unwrap();
    assert!(stored.contains("PrivateKey = <PRIVATE_KEY>") && !stored.contains(private_key), "{stored}");
}

#[tokio::test]
async fn a_pasted_key_is_stored_as_given_and_the_configuration_waits_for_its_private_key() {
    let app = TestApp::new().await;
    let (id, mut browser) = signed_in(&app, "pat@example.com", "unprivileged").await;
    let public_key = key();
    let res = add(&mut browser, &[("name", "phone"), ("key_mode", "own"), ("public_key", &public_key)]).await;
    res.expect_status(StatusCode::CREATED);
    let html = text(&res);
    let devices = devices_of(&app, &id).await;
    assert_eq!(devices[0]["public_key"], public_key.as_str());
    let config = config_text(&html);
    assert_eq!(line(&config, "PrivateKey"), "<PRIVATE_KEY>");
    assert_eq!(download(&html), config);
    assert!(!html.contains("id=\"qr\"") && !html.contains("data-browser-key"), "{html}");
}

#[tokio::test]
async fn a_browser_key_is_a_public_key_for_the_server_and_the_page_leaves_the_private_key_to_the_script() {
    let app = TestApp::new().await;
    let (id, mut browser) = signed_in(&app, "pat@example.com", "unprivileged").await;
    let public_key = key();
    // A pasted public key in `public_key` is ignored: the script's is the one.
    let fields = [("key_mode", "browser"), ("browser_public_key", &public_key), ("public_key", "ignored")];
    let res = add(&mut browser, &fields).await;
    res.expect_status(StatusCode::CREATED);
    let html = text(&res);
    let devices = devices_of(&app, &id).await;
    assert_eq!(devices[0]["public_key"], public_key.as_str());
    let (adjective, noun) = devices[0]["name"].as_str().unwrap().split_once('-').expect("a generated name");
    assert!(!adjective.is_empty() && !noun.is_empty());
    assert!(html.contains(&format!("data-browser-key=\"{public_key}\"")), "{html}");
    assert_eq!(line(&config_text(&html), "PrivateKey"), "<PRIVATE_KEY>");
    assert!(html.contains("<canvas class=\"qr\" id=\"qr\""), "{html}");

    let res = add(&mut browser, &[("key_mode", "browser"), ("browser_public_key", "")]).await;
    res.expect_status(StatusCode::UNPROCESSABLE_ENTITY);
    assert!(text(&res).contains("This browser did not make a key."));
    assert_eq!(devices_of(&app, &id).await.len(), 1);
}

#[tokio::test]
async fn validation_errors_show_the_form_again_with_the_values_kept() {
    let app = TestApp::new().await;
    let (id, mut browser) = signed_in(&app, "pat@example.com", "unprivileged").await;
    app.device_with(&id, json!({"name": "laptop"})).await;
    let fields = [("name", "laptop"), ("description", "<b>mine</b>"), ("key_mode", "own"), ("public_key", "nope")];
    let res = add(&mut browser, &fields).await;
    res.expect_status(StatusCode::UNPROCESSABLE_ENTITY);
    let html = text(&res);
    assert!(html.contains("name=\"name\" value=\"laptop\""), "{html}");
    assert!(html.contains(">&#60;b&#62;mine&#60;/b&#62;</textarea>"), "{html}");
    assert!(html.contains("name=\"public_key\" value=\"nope\""), "{html}");
    assert!(html.contains("value=\"own\" id=\"mode-own\" checked>"), "{html}");
    assert!(html.contains("<p class=\"error\" id=\"key-error\">must be a base64-encoded 32-byte key</p>"), "{html}");
    assert!(html.contains("data-fresh=\"false\""), "{html}");

    // The name is checked as the device is stored.
    let public_key = key();
    let res = add(&mut browser, &[("name", "laptop"), ("key_mode", "own"), ("public_key", &public_key)]).await;
    res.expect_status(StatusCode::UNPROCESSABLE_ENTITY);
    let html = text(&res);
    assert!(html.contains("<p class=\"error\" id=\"name-error\">has already been taken</p>"), "{html}");
    assert!(html.contains(&format!("name=\"public_key\" value=\"{public_key}\"")), "{html}");

    let res = add(&mut browser, &[("name", "tablet"), ("key_mode", "own"), ("public_key", "")]).await;
    res.expect_status(StatusCode::UNPROCESSABLE_ENTITY);
    assert!(text(&res).contains("Paste the device&#39;s public key"));
    assert_eq!(devices_of(&app, &id).await.len(), 1, "nothing added");
}

#[tokio::test]
async fn a_form_without_the_sessions_token_adds_nothing() {
    let app = TestApp::new().await;
    let (id, mut browser) = signed_in(&app, "pat@example.com", "unprivileged").await;
    let res = browser.post_form("/devices/new", &[("csrf_token", "forged"), ("key_mode", "server")]).await;
    res.expect_status(StatusCode::FORBIDDEN);
    assert!(text(&res).contains("security token"));
    let res = browser.post_form("/devices/new", &[("key_mode", "server")]).await;
    res.expect_status(StatusCode::FORBIDDEN);
    assert!(devices_of(&app, &id).await.is_empty());
}

#[tokio::test]
async fn at_the_device_limit_the_page_says_so_instead_of_the_form() {
    let app = TestApp::with_settings(|s| s.max_devices_per_user = 1).await;
    let (id, mut browser) = signed_in(&app, "pat@example.com", "unprivileged").await;
    app.device(&id).await;
    let res = browser.get("/devices/new").await;
    res.expect_status(StatusCode::OK);
    let html = text(&res);
    assert!(html.contains(LIMIT_REACHED) && !html.contains("action=\"/devices/new\""), "{html}");
    let res = add(&mut browser, &[("key_mode", "server")]).await;
    res.expect_status(StatusCode::FORBIDDEN);
    assert!(text(&res).contains(LIMIT_REACHED));
    assert_eq!(devices_of(&app, &id).await.len(), 1);
}

#[tokio::test]
async fn with_device_management_off_an_unprivileged_user_is_told_why() {
    let app = TestApp::new().await;
    let body = json!({"configuration": {"allow_unprivileged_device_management": false}});
    app.patch("/v0/configuration", &app.admin, body).await.expect_status(StatusCode::OK);
    let (id, mut browser) = signed_in(&app, "pat@example.com", "unprivileged").await;
    let html = text(&browser.get("/devices/new").await);
    assert!(html.contains(MANAGEMENT_OFF) && !html.contains("action=\"/devices/new\""), "{html}");
    add(&mut browser, &[("key_mode", "server")]).await.expect_status(StatusCode::FORBIDDEN);
    assert!(devices_of(&app, &id).await.is_empty());
}

#[tokio::test]
async fn an_unprivileged_user_may_not_add_a_device_for_someone_else() {
    let app = TestApp::new().await;
    let (id, mut browser) = signed_in(&app, "pat@example.com", "unprivileged").await;
    let other = app.admin_id.clone();
    for asked in [other.as_str(), "not-an-id"] {
        let res = browser.get(&format!("/devices/new?user_id={asked}")).await;
        res.expect_status(StatusCode::FORBIDDEN);
        add(&mut browser, &[("user_id", asked), ("key_mode", "server")]).await.expect_status(StatusCode::FORBIDDEN);
    }
    assert!(devices_of(&app, &other).await.is_empty());
    // Their own id is theirs to give.
    browser.get(&format!("/devices/new?user_id={id}")).await.expect_status(StatusCode::OK);
}

#[tokio::test]
async fn an_admin_adds_a_device_for_another_user() {
    let app = TestApp::new().await;
    let pat = password_user(&app, "pat@example.com", "unprivileged").await;
    let (_, mut admin) = signed_in(&app, "ada@example.com", "admin").await;
    let res = admin.get(&format!("/devices/new?user_id={pat}")).await;
    res.expect_status(StatusCode::OK);
    let html = text(&res);
    assert!(html.contains("Add a device for pat@example.com"), "{html}");
    assert!(html.contains(&format!("name=\"user_id\" value=\"{pat}\"")), "{html}");
    let res = add(&mut admin, &[("user_id", &pat), ("name", "pats-phone"), ("key_mode", "server")]).await;
    res.expect_status(StatusCode::CREATED);
    assert!(text(&res).contains("for pat@example.com"));
    let devices = devices_of(&app, &pat).await;
    assert_eq!(devices.len(), 1);
    assert_eq!(devices[0]["name"], "pats-phone");

    let unknown = uuid::Uuid::now_v7();
    admin.get(&format!("/devices/new?user_id={unknown}")).await.expect_status(StatusCode::NOT_FOUND);
    admin.get("/devices/new?user_id=nobody").await.expect_status(StatusCode::NOT_FOUND);
}
