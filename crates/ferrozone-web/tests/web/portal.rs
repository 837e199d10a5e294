//! The user portal's device pages: "My devices" at `/` and a device's page at
//! `/devices/{id}` (rename, delete with a confirmation, the configuration).

use axum::http::StatusCode;
use ferrozone_domain::model::StatsReport;
use ferrozone_domain::Timestamp;
use serde_json::{json, Value};

use crate::helpers::{TestApp, TestResponse};
use crate::signin::{password_user, text, Browser, PASSWORD};

async fn signed_in(app: &TestApp, email: &str, role: &str) -> (String, Browser) {
    let id = password_user(app, email, role).await;
    let mut browser = Browser::new(app);
    browser.sign_in(email, PASSWORD, "/").await.expect_status(StatusCode::SEE_OTHER);
    (id, browser)
}

fn id_of(device: &Value) -> &str {
    device["id"].as_str().unwrap()
}

/// The data plane saw `device` shake hands `secs_ago` seconds ago.
async fn handshake(app: &TestApp, device: &Value, secs_ago: i64) {
    let report = StatsReport {
        public_key: device["public_key"].as_str().unwrap().to_owned(),
        latest_handshake: Timestamp::now().plus_secs(-secs_ago),
        remote_ip: Some("198.51.100.7".into()),
        rx_bytes: 1536,
        tx_bytes: 5 * 1024 * 1024,
    };
    app.store.record_stats(vec![report]).await.unwrap();
}

/// The `<tr>` of the device `id` in `html`.
fn row<'a>(html: &'a str, id: &str) -> &'a str {
    let start = html.find(&format!("<tr data-id=\"{id}\">")).unwrap_or_else(|| panic!("no row {id}: {html}"));
    let end = html[start..].find("</tr>").unwrap() + start;
    &html[start..end]
}

fn location(res: &TestResponse) -> &str {
    res.header("location").unwrap_or_else(|| panic!("no location ({})", res.status))
}

#[tokio::test]
async fn my_devices_lists_only_one_s_own_devices_with_their_status() {
    let app = TestApp::new().await;
    let (id, mut browser) = signed_in(&app, "pat@example.com", "unprivileged").await;
    let online = app.device_with(&id, json!({"name": "laptop"})).await;
    let offline = app.device_with(&id, json!({"name": "old-phone"})).await;
    let never = app.device_with(&id, json!({"name": "new-tablet"})).await;
    let others = app.device_with(&app.admin_id, json!({"name": "admins-box"})).await;
    handshake(&app, &online, 30).await;
    handshake(&app, &offline, 600).await;

    let page = browser.get("/").await;
    page.expect_status(StatusCode::OK);
    let html = text(&page);
    assert!(!html.contains("admins-box") && !html.contains(id_of(&others)), "{html}");
    let laptop = row(&html, id_of(&online));
    assert!(laptop.contains(&format!("href=\"/devices/{}\">laptop</a>", id_of(&online))), "{laptop}");
    assert!(laptop.contains("class=\"badge ok\">Online<") && laptop.contains(">just now</time>"), "{laptop}");
    assert!(laptop.contains(">1.5 KiB<") && laptop.contains(">5.0 MiB<") && laptop.contains(">198.51.100.7<"));
    assert!(laptop.contains(online["ipv4"].as_str().unwrap()) && laptop.contains(online["ipv6"].as_str().unwrap()));
    let old = row(&html, id_of(&offline));
    assert!(old.contains("class=\"badge\">Offline<") && old.contains(">10 minutes ago</time>"), "{old}");
    assert!(row(&html, id_of(&never)).contains(">never</time>"));
    assert!(html.contains("<span id=\"devices-used\">3</span> of 10 devices used."), "{html}");
    assert!(html.contains("<a class=\"button\" href=\"/devices/new\">Add a device</a>"), "{html}");
    let script = crate::signin::attribute_after(&html, "<script type=\"module\" src=\"");
    assert!(script.starts_with("/assets/devices.") && script.ends_with(".js"), "{script}");
    let js = browser.get(&script).await;
    js.expect_status(StatusCode::OK);
    assert_eq!(js.header("content-type"), Some("text/javascript; charset=utf-8"));
}

#[tokio::test]
async fn an_empty_list_explains_devices_and_a_full_one_says_why_it_cannot_grow() {
    let app = TestApp::with_settings(|s| s.max_devices_per_user = 1).await;
    let (id, mut browser) = signed_in(&app, "pat@example.com", "unprivileged").await;
    let html = text(&browser.get("/").await);
    assert!(html.contains("<section class=\"panel\" id=\"devices-empty\">"), "{html}");
    assert!(html.contains("A device is a computer, phone or tablet"), "{html}");
    assert!(html.contains("href=\"/devices/new\""), "{html}");

    app.device(&id).await;
    let html = text(&browser.get("/").await);
    assert!(html.contains("id=\"devices-empty\" hidden"), "{html}");
    assert!(!html.contains("href=\"/devices/new\""), "{html}");
    assert!(html.contains("You cannot add a device: Maximum device limit reached."), "{html}");
}

#[tokio::test]
async fn with_device_management_off_the_list_says_so_instead_of_offering_to_add() {
    let app = TestApp::with_settings(|s| s.configuration.allow_unprivileged_device_management = false).await;
    let (_, mut browser) = signed_in(&app, "pat@example.com", "unprivileged").await;
    let html = text(&browser.get("/").await);
    assert!(!html.contains("href=\"/devices/new\""), "{html}");
    assert!(html.contains("allow_unprivileged_device_management is off"), "{html}");
}

#[tokio::test]
async fn the_list_is_paged_by_fifty() {
    let app = TestApp::with_settings(|s| s.max_devices_per_user = 60).await;
    let (id, mut browser) = signed_in(&app, "pat@example.com", "unprivileged").await;
    for n in 0..51 {
        app.device_with(&id, json!({"name": format!("device-{n:02}")})).await;
    }
    let html = text(&browser.get("/").await);
    assert_eq!(html.matches("<tr data-id=\"").count(), 51, "50 rows and the blank one");
    assert!(html.contains(">device-49</a>") && !html.contains(">device-50</a>"));
    let next = crate::signin::attribute_after(&html, "<a href=\"/?after=");
    let second = text(&browser.get(&format!("/?after={next}")).await);
    assert!(second.contains(">device-50</a>") && !second.contains(">device-49</a>"), "{second}");
    assert!(second.contains("<a href=\"/\">First page</a>") && second.contains("51</span> of 60"), "{second}");
}

#[tokio::test]
async fn another_user_s_device_or_an_unknown_one_is_not_found_but_an_admin_sees_any() {
    let app = TestApp::new().await;
    let (id, mut pat) = signed_in(&app, "pat@example.com", "unprivileged").await;
    let own = app.device_with(&id, json!({"name": "laptop", "description": "work"})).await;
    let others = app.device(&app.admin_id).await;
    let page = pat.get(&format!("/devices/{}", id_of(&own))).await;
    page.expect_status(StatusCode::OK);
    let html = text(&page);
    assert!(html.contains("<h1>laptop</h1>") && html.contains(own["public_key"].as_str().unwrap()), "{html}");
    assert!(html.contains("PrivateKey = &#60;PRIVATE_KEY&#62;"), "{html}");
    assert!(!html.contains("/admin/users/"), "no owner line for one's own device: {html}");
    for path in ["", "/delete", "/config"] {
        for device in [id_of(&others), "00000000-0000-0000-0000-000000000000", "not-an-id"] {
            let res = pat.get(&format!("/devices/{device}{path}")).await;
            assert_eq!(res.status, StatusCode::NOT_FOUND, "{device}{path}");
            assert!(text(&res).contains("Not found"));
        }
    }
    let token = pat.csrf_token().await;
    let refused = pat.post_form(&format!("/devices/{}/delete", id_of(&others)), &[("csrf_token", &token)]).await;
    assert_eq!(refused.status, StatusCode::NOT_FOUND);
    assert_eq!(app.show_device(id_of(&others)).await["id"], others["id"]);

    let (_, mut ada) = signed_in(&app, "ada@example.com", "admin").await;
    let html = text(&ada.get(&format!("/devices/{}", id_of(&own))).await);
    assert!(html.contains(&format!("Owner: <a href=\"/admin/users/{id}\">pat@example.com</a>")), "{html}");
}

#[tokio::test]
async fn renaming_needs_the_csrf_token_and_keeps_the_values_when_refused() {
    let app = TestApp::new().await;
    let (id, mut browser) = signed_in(&app, "pat@example.com", "unprivileged").await;
    let device = app.device_with(&id, json!({"name": "laptop"})).await;
    let path = format!("/devices/{}", id_of(&device));

    let forged = browser.post_form(&path, &[("name", "stolen"), ("description", ""), ("csrf_token", "forged")]).await;
    assert_eq!(forged.status, StatusCode::FORBIDDEN);
    let missing = browser.post_form(&path, &[("name", "stolen")]).await;
    assert_eq!(missing.status, StatusCode::FORBIDDEN);
    assert_eq!(app.show_device(id_of(&device)).await["name"], "laptop");

    let token = browser.csrf_token().await;
    let blank =
        browser.post_form(&path, &[("name", "  "), ("description", "<b>mine</b>"), ("csrf_token", &token)]).await;
    assert_eq!(blank.status, StatusCode::UNPROCESSABLE_ENTITY);
    let html = text(&blank);
    assert!(html.contains("id=\"device-name-error\">Name can&#39;t be blank</p>"), "{html}");
    assert!(html.contains("aria-invalid=\"true\" aria-describedby=\"device-name-error\""), "{html}");
    assert!(html.contains("value=\"&#60;b&#62;mine&#60;/b&#62;\""), "the description is kept: {html}");
    assert_eq!(app.show_device(id_of(&device)).await["name"], "laptop");

    let long = "x".repeat(2049);
    let too_long = browser.post_form(&path, &[("name", "ok"), ("description", &long), ("csrf_token", &token)]).await;
    assert_eq!(too_long.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        text(&too_long).contains("id=\"device-description-error\">Description should be at most 2048 character(s)</p>")
    );

    let saved =
        browser.post_form(&path, &[("name", "work laptop"), ("description", "desk"), ("csrf_token", &token)]).await;
    assert_eq!(saved.status, StatusCode::SEE_OTHER);
    assert_eq!(location(&saved), format!("{path}?saved=1"));
    let shown = app.show_device(id_of(&device)).await;
    assert_eq!((shown["name"].as_str(), shown["description"].as_str()), (Some("work laptop"), Some("desk")));
    let html = text(&browser.get(location(&saved)).await);
    assert!(html.contains("role=\"status\">Changes saved.</p>") && html.contains("<h1>work laptop</h1>"), "{html}");
}

#[tokio::test]
async fn with_device_management_off_the_page_offers_no_change() {
    let app = TestApp::with_settings(|s| s.configuration.allow_unprivileged_device_management = false).await;
    let (id, mut browser) = signed_in(&app, "pat@example.com", "unprivileged").await;
    let device = app.device_with(&id, json!({"name": "laptop"})).await;
    let path = format!("/devices/{}", id_of(&device));
    let html = text(&browser.get(&path).await);
    assert!(html.contains("allow_unprivileged_device_management is off") && !html.contains("name=\"name\""), "{html}");
    let token = browser.csrf_token().await;
    let refused = browser.post_form(&path, &[("name", "renamed"), ("csrf_token", &token)]).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN);
    let refused = browser.post_form(&format!("{path}/delete"), &[("csrf_token", &token)]).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN);
    assert_eq!(app.show_device(id_of(&device)).await["name"], "laptop");
}

#[tokio::test]
async fn deleting_asks_first_then_deletes_and_goes_home() {
    let app = TestApp::new().await;
    let (id, mut browser) = signed_in(&app, "pat@example.com", "unprivileged").await;
    let device = app.device_with(&id, json!({"name": "old-phone"})).await;
    let path = format!("/devices/{}/delete", id_of(&device));
    let confirm = browser.get(&path).await;
    confirm.expect_status(StatusCode::OK);
    let html = text(&confirm);
    assert!(html.contains("<h1 id=\"delete-heading\">Delete old-phone?</h1>") && html.contains("tunnel stops working"));
    assert!(html.contains(&format!("<form method=\"post\" action=\"{path}\">")), "{html}");
    assert_eq!(app.show_device(id_of(&device)).await["id"], device["id"], "showing the question deletes nothing");

    let forged = browser.post_form(&path, &[("csrf_token", "forged")]).await;
    assert_eq!(forged.status, StatusCode::FORBIDDEN);
    let token = browser.csrf_token().await;
    let deleted = browser.post_form(&path, &[("csrf_token", &token)]).await;
    assert_eq!((deleted.status, location(&deleted)), (StatusCode::SEE_OTHER, "/"));
    app.get(&format!("/v0/devices/{}", id_of(&device)), &app.admin).await.expect_not_found();
    assert!(!text(&browser.get("/").await).contains("old-phone"));
}

#[tokio::test]
async fn the_configuration_downloads_as_a_safely_named_file_without_the_private_key() {
    let app = TestApp::new().await;
    let (id, mut browser) = signed_in(&app, "pat@example.com", "unprivileged").await;
    let device = app.device_with(&id, json!({"name": "Pat's \"work\" laptop"})).await;
    let res = browser.get(&format!("/devices/{}/config", id_of(&device))).await;
    res.expect_status(StatusCode::OK);
    assert_eq!(res.header("content-type"), Some("text/plain; charset=utf-8"));
    assert_eq!(res.header("content-disposition"), Some("attachment; filename=\"Pat-s-work-lapt.conf\""));
    assert_eq!(res.header("cache-control"), Some("no-store"));
    let api = app.get(&format!("/v0/devices/{}/config", id_of(&device)), &app.admin).await;
    assert_eq!(res.raw, api.raw, "the same text as the API's");
    assert!(String::from_utf8(res.raw.clone()).unwrap().starts_with("[Interface]\nPrivateKey = <PRIVATE_KEY>\n"));
    let html = text(&browser.get(&format!("/devices/{}", id_of(&device))).await);
    assert!(html.contains("download=\"Pat-s-work-lapt.conf\""), "{html}");
}

/// Traffic is shown from the device's side (docs/web.md): WireGuard counts from the
/// gateway's, so what the gateway sent (`tx_bytes`, 5 MiB here) is what the device
/// downloaded, and what it received (`rx_bytes`, 1.5 KiB) what the device uploaded.
#[tokio::test]
async fn traffic_is_shown_as_what_the_device_downloaded_and_uploaded() {
    let app = TestApp::new().await;
    let (id, mut browser) = signed_in(&app, "pat@example.com", "unprivileged").await;
    let device = app.device_with(&id, json!({"name": "laptop"})).await;
    handshake(&app, &device, 30).await;

    let html = text(&browser.get("/").await);
    let head = "<th scope=\"col\" class=\"num\">Downloaded</th><th scope=\"col\" class=\"num\">Uploaded</th>";
    assert!(html.contains(head) && !html.contains(">Received<") && !html.contains(">Sent<"), "{html}");
    let laptop = row(&html, id_of(&device));
    assert!(laptop.contains("data-field=\"downloaded\">5.0 MiB<"), "{laptop}");
    assert!(laptop.contains("data-field=\"uploaded\">1.5 KiB<"), "{laptop}");
    let page = text(&browser.get(&format!("/devices/{}", id_of(&device))).await);
    assert!(page.contains("<dt>Downloaded</dt><dd>5.0 MiB</dd>"), "{page}");
    assert!(page.contains("<dt>Uploaded</dt><dd>1.5 KiB</dd>"), "{page}");
}

/// Issue 35: a device is paused and resumed from its page by its owner (and by an admin,
/// with the last address it came from); the page diagnoses it; the lists say Paused.
#[tokio::test]
async fn a_device_is_paused_and_resumed_from_its_page_and_diagnosed() {
    let app = TestApp::new().await;
    let (me, mut browser) = signed_in(&app, "me@example.com", "unprivileged").await;
    let device = app.device(&me).await;
    let id = id_of(&device);
    let page = text(browser.get(&format!("/devices/{id}")).await.expect_status(StatusCode::OK));
    assert!(page.contains("Never connected: no handshake yet."), "{page}");
    // Figures only move forward (a gateway never overwrites newer ones): stale first.
    handshake(&app, &device, 3 * 3600).await;
    let page = text(&browser.get(&format!("/devices/{id}")).await);
    assert!(page.contains("Handshake stale: the last was 3 hours ago."), "{page}");
    handshake(&app, &device, 30).await;
    let page = text(&browser.get(&format!("/devices/{id}")).await);
    assert!(page.contains("Connected: last handshake"), "{page}");
    assert!(!page.contains("Last came from"), "the address it came from is for admins");

    let token = browser.csrf_token().await;
    let paused = browser.post_form(&format!("/devices/{id}/pause"), &[("csrf_token", &token)]).await;
    assert_eq!(location(&paused), format!("/devices/{id}"));
    let active: Vec<String> = app.domain.active_peers().await.unwrap().into_iter().map(|p| p.public_key).collect();
    assert!(active.is_empty(), "off the interface");
    let page = text(&browser.get(&format!("/devices/{id}")).await);
    assert!(
        page.contains("<span class=\"badge\">Paused</span>")
            && page.contains("Paused: off the VPN until it is resumed")
    );
    assert!(page.contains(&format!("action=\"/devices/{id}/resume\"")), "Resume offered");
    let list = text(&browser.get("/").await);
    assert!(row(&list.replace(" data-paused=\"true\"", ""), id).contains(">Paused</span>"), "the list says Paused");
    assert!(list.contains(&format!("<tr data-id=\"{id}\" data-paused=\"true\">")), "and tells the live update");

    let (_, mut admin) = signed_in(&app, "boss@example.com", "admin").await;
    let page = text(&admin.get(&format!("/devices/{id}")).await);
    assert!(page.contains("Last came from 198.51.100.7."), "{page}");
    let token = admin.csrf_token().await;
    admin
        .post_form(&format!("/devices/{id}/resume"), &[("csrf_token", &token)])
        .await
        .expect_status(StatusCode::SEE_OTHER);
    assert_eq!(app.domain.active_peers().await.unwrap().len(), 1, "back on the interface");
    let forged = browser.post_form(&format!("/devices/{id}/pause"), &[("csrf_token", "wrong")]).await;
    forged.expect_status(StatusCode::FORBIDDEN);
    assert_eq!(app.domain.active_peers().await.unwrap().len(), 1, "not paused without the session's token");
}

/// Issue 35: a device's tunnel settings, each the server's default or the device's own, on
/// `/devices/{id}/tunnel`: an admin always, the owner while the switch allows it; the
/// API's messages at their fields.
#[tokio::test]
async fn tunnel_settings_are_the_defaults_or_the_devices_own_with_the_apis_rules() {
    let app = TestApp::with_settings(|s| s.configuration.allow_unprivileged_device_configuration = false).await;
    let (me, mut browser) = signed_in(&app, "me@example.com", "unprivileged").await;
    let device = app.device(&me).await;
    let path = format!("/devices/{}/tunnel", id_of(&device));
    let page = text(browser.get(&path).await.expect_status(StatusCode::OK));
    assert!(page.contains("allow_unprivileged_device_configuration is off") && page.contains(" disabled"), "{page}");
    let token = browser.csrf_token().await;
    let own_mtu = [
        ("csrf_token", token.as_str()),
        ("use_default_allowed_ips", "on"),
        ("use_default_dns", "on"),
        ("use_default_endpoint", "on"),
        ("mtu", "1400"),
        ("use_default_persistent_keepalive", "on"),
    ];
    browser.post_form(&path, &own_mtu).await.expect_status(StatusCode::FORBIDDEN);
    assert_eq!(app.show_device(id_of(&device)).await["use_default_mtu"], true, "nothing changed");

    let (_, mut admin) = signed_in(&app, "boss@example.com", "admin").await;
    let token = admin.csrf_token().await;
    let page = text(admin.get(&path).await.expect_status(StatusCode::OK));
    assert!(
        page.contains("name=\"use_default_mtu\" checked")
            && page.contains("Use the server's default: <span class=\"address\">1280</span>"),
        "{page}"
    );
    let fields = [
        ("csrf_token", token.as_str()),
        ("use_default_allowed_ips", "on"),
        ("dns", "9.9.9.9, 149.112.112.112"),
        ("use_default_endpoint", "on"),
        ("mtu", "1400"),
        ("persistent_keepalive", ""),
    ];
    let saved = admin.post_form(&path, &fields).await;
    assert_eq!(location(&saved), format!("/devices/{}?saved=1", id_of(&device)));
    let stored = app.show_device(id_of(&device)).await;
    assert_eq!(
        (
            &stored["use_default_dns"],
            &stored["dns"],
            &stored["mtu"],
            &stored["use_default_persistent_keepalive"],
            &stored["persistent_keepalive"]
        ),
        (&json!(false), &json!(["9.9.9.9", "149.112.112.112"]), &json!(1400), &json!(false), &Value::Null),
        "own DNS and MTU, no keepalive line"
    );
    assert_eq!(stored["allowed_ips"], json!(["0.0.0.0/0", "::/0"]), "still the default");

    let bad = [
        ("csrf_token", token.as_str()),
        ("allowed_ips", "10.0.0.0/33"),
        ("use_default_dns", "on"),
        ("endpoint", ""),
        ("mtu", "9000"),
        ("persistent_keepalive", "often"),
    ];
    let page = text(admin.post_form(&path, &bad).await.expect_status(StatusCode::UNPROCESSABLE_ENTITY));
    assert!(page.contains("Persistent keepalive (seconds) must be a whole number"), "{page}");
    assert!(page.contains("value=\"often\"") && page.contains("value=\"10.0.0.0/33\""), "the values are kept");
    let bad = [
        ("csrf_token", token.as_str()),
        ("allowed_ips", "10.0.0.0/33"),
        ("use_default_dns", "on"),
        ("endpoint", ""),
        ("mtu", "9000"),
        ("use_default_persistent_keepalive", "on"),
    ];
    let page = text(admin.post_form(&path, &bad).await.expect_status(StatusCode::UNPROCESSABLE_ENTITY));
    for message in ["Allowed IPs is invalid", "Endpoint can&#39;t be blank", "MTU must be less than or equal to 1500"] {
        assert!(page.contains(message), "{message}: {page}");
    }
    assert_eq!(app.show_device(id_of(&device)).await["mtu"], 1400, "nothing changed");
}
