//! The actions of a user's page: each a form with the CSRF token that comes back to the
//! page with a notice, or shows the domain's refusal there.

use axum::http::StatusCode;
use serde_json::Value;

use super::{admin_browser, location, page};
use crate::helpers::TestApp;
use crate::signin::{password_user, text, Browser, PASSWORD};

/// The public keys of the devices the data plane should have as peers.
async fn peer_keys(app: &TestApp) -> Vec<String> {
    app.domain.active_peers().await.expect("active peers").into_iter().map(|p| p.public_key).collect()
}

/// A user with a password, signed in in a browser of its own; its id and that browser.
async fn signed_in_user(app: &TestApp, email: &str) -> (String, Browser) {
    let id = password_user(app, email, "unprivileged").await;
    let mut browser = Browser::on(app.router.clone(), "192.0.2.20:40000");
    browser.sign_in(email, PASSWORD, "/").await.expect_status(StatusCode::SEE_OTHER);
    browser.get("/").await.expect_status(StatusCode::OK);
    (id, browser)
}

/// Posts the action `action` of user `id`'s page; expects the redirect back with `done`.
async fn act(browser: &mut Browser, csrf: &str, id: &str, action: &str, extra: &[(&str, &str)], done: &str) -> String {
    let mut fields = vec![("csrf_token", csrf)];
    fields.extend_from_slice(extra);
    let res = browser.post_form(&format!("/admin/users/{id}/{action}"), &fields).await;
    assert_eq!(location(&res), format!("/admin/users/{id}?done={done}"), "{action}");
    page(&browser.get(location(&res)).await)
}

#[tokio::test]
async fn the_page_shows_facts_devices_and_sessions() {
    let app = TestApp::new().await;
    let (mut admin, _, _) = admin_browser(&app).await;
    let (id, _) = signed_in_user(&app, "sam@example.com").await;
    let device = app.device(&id).await;
    let html = page(&admin.get(&format!("/admin/users/{id}")).await);
    assert!(html.contains("<h1>sam@example.com</h1>") && html.contains("<dd>User</dd>"), "{html}");
    assert!(html.contains("<span class=\"badge ok\">Active</span>") && html.contains(", by password</dd>"), "{html}");
    let name = device["name"].as_str().unwrap();
    assert!(html.contains(&format!("<a href=\"/devices/{}\">{name}</a>", device["id"].as_str().unwrap())), "{html}");
    assert!(html.contains(device["ipv4"].as_str().unwrap()) && html.contains(">Offline</span>"), "{html}");
    assert!(html.contains(&format!("href=\"/devices/new?user_id={id}\">Add a device for this user</a>")), "{html}");
    assert!(html.contains("<h2 id=\"sessions-heading\">Sessions (1)</h2>"), "{html}");
    admin.get("/admin/users/not-a-uuid").await.expect_status(StatusCode::NOT_FOUND);
    admin.get(&format!("/admin/users/{}", uuid::Uuid::now_v7())).await.expect_status(StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn promote_and_demote_and_the_domains_refusals_show_on_the_page() {
    let app = TestApp::new().await;
    let (mut admin, csrf, own_id) = admin_browser(&app).await;
    let (id, _) = app.user("up@example.com", "unprivileged").await;
    let html = act(&mut admin, &csrf, &id, "role", &[("role", "admin")], "promoted").await;
    assert!(html.contains("The user is now an admin.") && html.contains("<dd>Admin</dd>"), "{html}");
    assert_eq!(app.show_user(&id).await["role"], "admin");
    act(&mut admin, &csrf, &id, "role", &[("role", "unprivileged")], "demoted").await;
    assert_eq!(app.show_user(&id).await["role"], "unprivileged");

    let res = admin
        .post_form(&format!("/admin/users/{own_id}/role"), &[("csrf_token", &csrf), ("role", "unprivileged")])
        .await;
    res.expect_status(StatusCode::UNPROCESSABLE_ENTITY);
    assert!(text(&res).contains("<p class=\"error\" role=\"alert\">You cannot change your own role</p>"));
    let res = admin.post_form(&format!("/admin/users/{own_id}/disable"), &[("csrf_token", &csrf)]).await;
    res.expect_status(StatusCode::UNPROCESSABLE_ENTITY);
    assert!(text(&res).contains("You cannot disable yourself"));
    let res = admin.post_form(&format!("/admin/users/{own_id}/delete"), &[("csrf_token", &csrf)]).await;
    res.expect_status(StatusCode::UNPROCESSABLE_ENTITY);
    assert!(text(&res).contains("You cannot delete yourself."));
    assert_eq!(app.show_user(&own_id).await["role"], "admin");
    admin
        .post_form(&format!("/admin/users/{id}/role"), &[("csrf_token", &csrf), ("role", "root")])
        .await
        .expect_status(StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn disabling_ends_sessions_and_takes_devices_off_the_vpn_until_enabled() {
    let app = TestApp::new().await;
    let (mut admin, csrf, _) = admin_browser(&app).await;
    let (id, mut theirs) = signed_in_user(&app, "leaves@example.com").await;
    let key = app.device(&id).await["public_key"].as_str().unwrap().to_owned();
    assert!(peer_keys(&app).await.contains(&key));

    let html = act(&mut admin, &csrf, &id, "disable", &[], "disabled").await;
    assert!(html.contains("The user was disabled") && html.contains("<span class=\"badge bad\">Disabled</span> since"));
    assert!(html.contains("Disabled by an administrator") && !html.contains("The provider refused"), "{html}");
    assert!(html.contains("Sessions (0)") && html.contains(">Enable</button>"), "{html}");
    assert!(!peer_keys(&app).await.contains(&key), "its device left the peers");
    assert!(location(&theirs.get("/").await).starts_with("/sign_in"), "their session ended");
    let refused = theirs.sign_in("leaves@example.com", PASSWORD, "/").await;
    refused.expect_status(StatusCode::UNAUTHORIZED);

    let html = act(&mut admin, &csrf, &id, "enable", &[], "enabled").await;
    assert!(html.contains("<span class=\"badge ok\">Active</span>") && !html.contains("Disabled by"), "{html}");
    assert!(peer_keys(&app).await.contains(&key), "its device is back");
    theirs.sign_in("leaves@example.com", PASSWORD, "/").await.expect_status(StatusCode::SEE_OTHER);
}

#[tokio::test]
async fn resetting_a_password_ends_sessions_and_sign_out_everywhere_ends_them_too() {
    let app = TestApp::new().await;
    let (mut admin, csrf, _) = admin_browser(&app).await;
    let (id, mut theirs) = signed_in_user(&app, "forgot@example.com").await;
    let path = format!("/admin/users/{id}/password");

    for (fields, message) in [
        (vec![("password", ""), ("password_confirmation", "")], "id=\"reset-password-error\">Password can't be blank"),
        (
            vec![("password", "short"), ("password_confirmation", "short")],
            "id=\"reset-password-error\">Password should be at least 12",
        ),
        (
            vec![("password", "a brand new password"), ("password_confirmation", "typo")],
            "id=\"reset-confirmation-error\">",
        ),
    ] {
        let mut sent = vec![("csrf_token", csrf.as_str())];
        sent.extend(fields);
        let res = admin.post_form(&path, &sent).await;
        res.expect_status(StatusCode::UNPROCESSABLE_ENTITY);
        let html = text(&res).replace("&#39;", "'");
        assert!(html.contains(message), "{message}: {html}");
    }
    theirs.get("/").await.expect_status(StatusCode::OK);

    let new = "a brand new password";
    let html =
        act(&mut admin, &csrf, &id, "password", &[("password", new), ("password_confirmation", new)], "password").await;
    assert!(html.contains("The password was changed"), "{html}");
    assert!(location(&theirs.get("/").await).starts_with("/sign_in"), "their session ended");
    theirs.sign_in("forgot@example.com", PASSWORD, "/").await.expect_status(StatusCode::UNAUTHORIZED);
    theirs.sign_in("forgot@example.com", new, "/").await.expect_status(StatusCode::SEE_OTHER);
    theirs.get("/").await.expect_status(StatusCode::OK);
    let mut again = Browser::on(app.router.clone(), "192.0.2.30:40000");
    again.sign_in("forgot@example.com", new, "/").await.expect_status(StatusCode::SEE_OTHER);

    let html = act(&mut admin, &csrf, &id, "sign_out", &[], "signed_out").await;
    assert!(html.contains("Every session of the user ended.") && html.contains("Sessions (0)"), "{html}");
    for browser in [&mut theirs, &mut again] {
        assert!(location(&browser.get("/").await).starts_with("/sign_in"));
    }
    admin.get("/").await.expect_status(StatusCode::OK);
}

#[tokio::test]
async fn deleting_confirms_what_goes_with_the_user() {
    let app = TestApp::new().await;
    let (mut admin, csrf, _) = admin_browser(&app).await;
    let (id, _) = app.user("gone@example.com", "unprivileged").await;
    app.device(&id).await;
    app.device(&id).await;
    let rule = serde_json::json!({"rule": {"destination": "10.9.0.0/16", "action": "drop", "user_id": id}});
    app.post("/v0/rules", &app.admin, rule).await.expect_status(StatusCode::CREATED);

    let html = page(&admin.get(&format!("/admin/users/{id}/delete")).await);
    assert!(html.contains("<h1>Delete gone@example.com?</h1>"), "{html}");
    for fact in ["2 devices", "1 API token<", "1 egress rule<", "0 sessions"] {
        assert!(html.contains(fact), "{fact}: {html}");
    }
    let res = admin.post_form(&format!("/admin/users/{id}/delete"), &[("csrf_token", &csrf)]).await;
    assert_eq!(location(&res), "/admin/users?done=deleted");
    let list = page(&admin.get(location(&res)).await);
    assert!(list.contains("The user was deleted") && !list.contains("gone@example.com"), "{list}");
    app.get(&format!("/v0/users/{id}"), &app.admin).await.expect_not_found();
    assert_eq!(app.list("/v0/devices").await.len(), 0);
    admin.get(&format!("/admin/users/{id}/delete")).await.expect_status(StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn a_form_without_the_csrf_token_is_403_and_changes_nothing() {
    let app = TestApp::new().await;
    let (mut admin, _, _) = admin_browser(&app).await;
    let (id, mut theirs) = signed_in_user(&app, "safe@example.com").await;
    let before = app.show_user(&id).await;
    let user = format!("/admin/users/{id}");
    for (action, fields) in [
        ("role", vec![("role", "admin")]),
        ("disable", vec![]),
        ("password", vec![("password", "a brand new password"), ("password_confirmation", "a brand new password")]),
        ("sign_out", vec![]),
        ("delete", vec![]),
    ] {
        for token in [None, Some("forged")] {
            let mut sent = fields.clone();
            if let Some(token) = token {
                sent.push(("csrf_token", token));
            }
            let res = admin.post_form(&format!("{user}/{action}"), &sent).await;
            res.expect_status(StatusCode::FORBIDDEN);
            assert!(text(&res).contains("nothing was changed"), "{action}");
        }
    }
    let sent = [("email", "csrf@example.com"), ("role", "admin")];
    admin.post_form("/admin/users/new", &sent).await.expect_status(StatusCode::FORBIDDEN);
    assert!(app.domain.user_with_email("csrf@example.com").await.unwrap().is_none());
    assert_eq!(app.show_user(&id).await, before);
    theirs.get("/").await.expect_status(StatusCode::OK);
    let _: Value = before;
}

/// Records a handshake a few seconds ago for the device with `public_key`: it is online.
async fn just_seen(app: &TestApp, public_key: &str) {
    let report = ferrozone_domain::model::StatsReport {
        public_key: public_key.to_owned(),
        latest_handshake: ferrozone_domain::Timestamp::now().plus_secs(-5),
        remote_ip: Some("198.51.100.7".into()),
        rx_bytes: 1,
        tx_bytes: 1,
    };
    app.store.record_stats(vec![report]).await.unwrap();
}

/// The text of the status cell of the row (or fact) after `marker` in `html`.
fn status_after(html: &str, marker: &str) -> String {
    let rest = html.split(marker).nth(1).unwrap_or_else(|| panic!("no {marker} in {html}"));
    let badge = rest.split("class=\"badge").nth(1).expect("a status badge");
    badge.split_once('>').unwrap().1.split('<').next().unwrap().to_owned()
}

/// The device's status on the user's page, on All devices and on the device's page.
async fn statuses(admin: &mut Browser, user_id: &str, device_id: &str) -> [String; 3] {
    let row = format!("<a href=\"/devices/{device_id}\">");
    let user = page(&admin.get(&format!("/admin/users/{user_id}")).await);
    let all = page(&admin.get("/admin/devices").await);
    let shown = page(&admin.get(&format!("/devices/{device_id}")).await);
    [status_after(&user, &row), status_after(&all, &row), status_after(&shown, "<dt>Status</dt>")]
}

/// A disabled user's devices left the VPN: the pages say so, even while the last handshake
/// is recent (it stays so for up to 3 minutes), instead of "Online".
#[tokio::test]
async fn a_disabled_users_devices_read_off_the_vpn_not_online() {
    let app = TestApp::new().await;
    let (mut admin, csrf, _) = admin_browser(&app).await;
    let (id, _) = app.user("away@example.com", "unprivileged").await;
    let device = app.device(&id).await;
    let device_id = device["id"].as_str().unwrap();
    just_seen(&app, device["public_key"].as_str().unwrap()).await;
    assert_eq!(statuses(&mut admin, &id, device_id).await, ["Online"; 3]);

    act(&mut admin, &csrf, &id, "disable", &[], "disabled").await;
    assert_eq!(statuses(&mut admin, &id, device_id).await, ["Off the VPN: user disabled"; 3]);
    act(&mut admin, &csrf, &id, "enable", &[], "enabled").await;
    assert_eq!(statuses(&mut admin, &id, device_id).await, ["Online"; 3], "back on the VPN");
}
