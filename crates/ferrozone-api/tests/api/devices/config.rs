//! `GET /v0/devices/{id}/config`: the wg-quick file from the effective settings, as text,
//! PNG or SVG QR code, with the visibility of `GET /v0/devices/{id}`.

use axum::http::{Method, StatusCode};
use serde_json::{json, Value};

use super::id_of;
use crate::helpers::{decode_qr, TestApp, TestResponse};

const UNKNOWN_ID: &str = "6f1c2b9e-3d4a-4c5b-9e8f-0a1b2c3d4e5f";

/// `GET /v0/devices/{id}/config{query}` with `token`.
async fn config(app: &TestApp, device: &Value, query: &str, token: &str) -> TestResponse {
    app.get(&format!("/v0/devices/{}/config{query}", id_of(device)), token).await
}

/// The text configuration, asserting its 200 and headers.
async fn config_text(app: &TestApp, device: &Value, token: &str) -> String {
    let res = config(app, device, "", token).await;
    res.expect_status(StatusCode::OK);
    assert_eq!(res.header("content-type"), Some("text/plain; charset=utf-8"));
    assert_eq!(res.header("cache-control"), Some("no-store"), "it holds the preshared key");
    String::from_utf8(res.raw.clone()).expect("UTF-8 text")
}

/// The `[Peer]` section every configuration of `device` on `app` ends with, from `rest`
/// (the lines after `PresharedKey`).
fn peer(app: &TestApp, device: &Value, rest: &str) -> String {
    format!(
        "[Peer]\nPublicKey = {}\nPresharedKey = {}\n{rest}",
        app.domain.server_public_key(),
        device["preshared_key"].as_str().expect("a preshared key"),
    )
}

#[tokio::test]
async fn defaults_fill_the_configuration() {
    let app = TestApp::new().await;
    let d = app.device(&app.admin_id).await;
    let expected = format!(
        "[Interface]\nPrivateKey = <PRIVATE_KEY>\nAddress = {}/32, {}/128\nDNS = 1.1.1.1, 1.0.0.1\nMTU = 1280\n\n{}",
        d["ipv4"].as_str().unwrap(),
        d["ipv6"].as_str().unwrap(),
        peer(&app, &d, "AllowedIPs = 0.0.0.0/0, ::/0\nEndpoint = localhost:51820\nPersistentKeepalive = 25\n"),
    );
    assert_eq!(config_text(&app, &d, &app.admin).await, expected);
    let explicit = config(&app, &d, "?format=text&unknown=1", &app.admin).await;
    assert_eq!(explicit.expect_status(StatusCode::OK).raw, expected.as_bytes(), "format=text is the default");
}

#[tokio::test]
async fn custom_values_win_and_empty_ones_leave_their_lines_out() {
    let app = TestApp::with_settings(|s| s.configuration.default_client_dns = Vec::new()).await;
    let attrs = json!({
        "ipv4": "10.3.2.9", "ipv6": "fd00::3:2:9",
        "use_default_allowed_ips": false, "allowed_ips": ["10.0.0.0/8", "fd00::/64"],
        "use_default_endpoint": false, "endpoint": "vpn.example.com:51821",
        "use_default_mtu": false, "mtu": 1420,
        "use_default_persistent_keepalive": false, "persistent_keepalive": 0,
    });
    let d = app.device_with(&app.admin_id, attrs).await;
    let expected = format!(
        "[Interface]\nPrivateKey = <PRIVATE_KEY>\nAddress = 10.3.2.9/32, fd00::3:2:9/128\nMTU = 1420\n\n{}",
        peer(&app, &d, "AllowedIPs = 10.0.0.0/8, fd00::/64\nEndpoint = vpn.example.com:51821\n"),
    );
    assert_eq!(config_text(&app, &d, &app.admin).await, expected);

    // Back to the defaults: the configuration follows.
    let back =
        json!({"device": {"use_default_persistent_keepalive": true, "use_default_dns": false, "dns": ["9.9.9.9"]}});
    app.patch(&format!("/v0/devices/{}", id_of(&d)), &app.admin, back).await.expect_status(StatusCode::OK);
    let text = config_text(&app, &d, &app.admin).await;
    assert!(text.contains("\nDNS = 9.9.9.9\n") && text.ends_with("\nPersistentKeepalive = 25\n"), "{text}");
}

#[tokio::test]
async fn an_ipv4_only_device_has_one_address() {
    let app = TestApp::with_settings(|s| s.pools.v6 = None).await;
    let d = app.device_with(&app.admin_id, json!({"ipv4": "10.3.2.7"})).await;
    let text = config_text(&app, &d, &app.admin).await;
    assert!(text.contains("\nAddress = 10.3.2.7/32\n"), "{text}");
    assert!(!text.contains("/128"), "{text}");
}

#[tokio::test]
async fn owners_see_their_own_configuration_and_nobody_elses() {
    let app = TestApp::new().await;
    let (me, my_token) = app.user("me@example.com", "unprivileged").await;
    let (_, other_token) = app.user("other@example.com", "unprivileged").await;
    let mine = app.device(&me).await;
    let admins = app.device(&app.admin_id).await;
    let text = config_text(&app, &mine, &my_token).await;
    assert!(text.contains(mine["preshared_key"].as_str().unwrap()), "{text}");
    assert_eq!(text, config_text(&app, &mine, &app.admin).await, "admins see any device's");
    for (device, token) in [(&mine, &other_token), (&admins, &my_token)] {
        for query in ["", "?format=qr", "?format=qr-svg"] {
            config(&app, device, query, token).await.expect_not_found();
        }
    }
    for bad in [UNKNOWN_ID, "not-a-uuid"] {
        app.get(&format!("/v0/devices/{bad}/config"), &app.admin).await.expect_not_found();
    }
    let path = format!("/v0/devices/{}/config", id_of(&mine));
    app.request(Method::GET, &path, None, None).await.expect_auth_error("unauthenticated");
    app.get(&path, "fz_nonsense").await.expect_auth_error("invalid_token");
}

#[tokio::test]
async fn the_png_qr_code_decodes_to_the_configuration() {
    let app = TestApp::new().await;
    let d = app.device(&app.admin_id).await;
    let text = config_text(&app, &d, &app.admin).await;
    let res = config(&app, &d, "?format=qr", &app.admin).await;
    res.expect_status(StatusCode::OK);
    assert_eq!(res.header("content-type"), Some("image/png"));
    assert_eq!(res.header("cache-control"), Some("no-store"));
    assert!(res.raw.starts_with(b"\x89PNG\r\n\x1a\n"), "the PNG signature");
    assert_eq!(decode_qr(&res.raw), text);
}

#[tokio::test]
async fn the_svg_qr_code_is_an_svg_document() {
    let app = TestApp::new().await;
    let d = app.device(&app.admin_id).await;
    let res = config(&app, &d, "?format=qr-svg", &app.admin).await;
    res.expect_status(StatusCode::OK);
    assert_eq!(res.header("content-type"), Some("image/svg+xml"));
    let svg = String::from_utf8(res.raw.clone()).unwrap();
    let doc = roxmltree::Document::parse(&svg).expect("well-formed XML");
    let root = doc.root_element();
    assert_eq!((root.tag_name().name(), root.tag_name().namespace()), ("svg", Some("http://www.w3.org/2000/svg")));
    let side: u32 = root.attribute("width").unwrap().parse().unwrap();
    assert_eq!(root.attribute("height"), Some(side.to_string().as_str()), "square");
    assert!(side >= 200, "{side}");
    let path = root.children().find(|n| n.has_tag_name("path")).expect("the modules");
    assert!(path.attribute("d").is_some_and(|d| d.len() > 100));
}

#[tokio::test]
async fn other_formats_are_400_and_overlong_qr_codes_422() {
    let app = TestApp::new().await;
    let d = app.device(&app.admin_id).await;
    for bad in ["?format=", "?format=QR", "?format=pdf", "?format=text&format=svg", "?format=%00"] {
        config(&app, &d, bad, &app.admin).await.expect_bad_request();
    }
    // Authentication still comes first.
    let path = format!("/v0/devices/{}/config?format=pdf", id_of(&d));
    app.request(Method::GET, &path, None, None).await.expect_auth_error("unauthenticated");

    let many: Vec<String> = (0..300).map(|i| format!("10.{}.{}.0/24", i / 256, i % 256)).collect();
    let long = app.device_with(&app.admin_id, json!({"use_default_allowed_ips": false, "allowed_ips": many})).await;
    assert!(config_text(&app, &long, &app.admin).await.len() > 3000);
    for query in ["?format=qr", "?format=qr-svg"] {
        let res = config(&app, &long, query, &app.admin).await;
        res.expect_errors(json!({"format": ["the configuration is too long for a QR code"]}));
    }
}

#[tokio::test]
async fn the_text_is_an_attachment_named_for_the_device() {
    let app = TestApp::new().await;
    for (name, disposition) in [
        ("work laptop", r#"attachment; filename="work-laptop.conf""#),
        ("a\"b/../c\\d", r#"attachment; filename="a-b-..-c-d.conf""#),
        ("Zoë's phone", r#"attachment; filename="Zo-s-phone.conf"; filename*=UTF-8''Zo%C3%AB-s-phone.conf"#),
    ] {
        let d = app.device_with(&app.admin_id, json!({"name": name})).await;
        let res = config(&app, &d, "", &app.admin).await;
        res.expect_status(StatusCode::OK);
        assert_eq!(res.header("content-disposition"), Some(disposition), "{name}");
        let qr = config(&app, &d, "?format=qr", &app.admin).await;
        assert_eq!(qr.header("content-disposition"), None, "a QR code is shown, not saved");
    }
}

/// A stored value with a line break (no API accepts one; a database edited by hand, or an
/// old import) is not written into the file, where wg-quick would read a `PostUp` line.
#[tokio::test]
async fn a_stored_value_with_a_line_break_is_refused_not_written() {
    let app = TestApp::new().await;
    let d = app.device(&app.admin_id).await;
    let id: uuid::Uuid = id_of(&d).parse().unwrap();
    let stored = app.store.device_by_id(id).await.unwrap().unwrap();
    let mut update = ferrozone_domain::model::DeviceUpdate {
        name: stored.name.clone(),
        description: None,
        public_key: stored.public_key.clone(),
        preshared_key: None,
        ipv4: stored.ipv4,
        ipv6: stored.ipv6,
        use_default: stored.use_default,
        custom: stored.custom.clone(),
    };
    update.use_default.endpoint = false;
    update.custom.endpoint = Some("vpn.example.com:51820\nPostUp = touch /tmp/pwn".into());
    app.store.update_device(id, &update, ferrozone_domain::Timestamp::now()).await.unwrap();
    let res = config(&app, &d, "", &app.admin).await;
    res.expect_errors(json!({"endpoint": [ferrozone_domain::client_config::HOLDS_LINE_BREAK]}));
    assert!(!String::from_utf8_lossy(&res.raw).contains("PostUp"));
}
