//! The admin console's pages (devices, tokens, settings, first-run hints) and the API
//! they mirror: `GET /v0/devices?online=`, `GET /v0/tokens?all=true`, `GET /v0/server`.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::SystemTime;

use axum::http::StatusCode;
use ferrozone_domain::model::StatsReport;
use ferrozone_domain::providers::Providers;
use ferrozone_domain::Timestamp;
use ferrozone_http::{
    AppState, DataPlaneHealth, DataPlaneProbe, ReportedSetting, RoutingHealth, ServerReport, SettingSource, WebSettings,
};
use serde_json::{json, Value};

use crate::helpers::TestApp;
use crate::signin::{attribute_after, password_user, text, Browser, PASSWORD};

const ADMIN: &str = "boss@example.com";

/// An app whose admin `boss@example.com` is signed in, in the returned browser; users may
/// have up to 100 devices.
async fn console() -> (TestApp, Browser) {
    let app = TestApp::with_settings(|s| s.max_devices_per_user = 100).await;
    password_user(&app, ADMIN, "admin").await;
    let mut browser = Browser::new(&app);
    browser.sign_in(ADMIN, PASSWORD, "/").await.expect_status(StatusCode::SEE_OTHER);
    (app, browser)
}

/// Records a handshake `secs_ago` seconds ago for the device with `public_key`.
async fn handshake(app: &TestApp, public_key: &str, secs_ago: i64) {
    let report = StatsReport {
        public_key: public_key.to_owned(),
        latest_handshake: Timestamp::now().plus_secs(-secs_ago),
        remote_ip: Some("198.51.100.7".into()),
        rx_bytes: 1536,
        tx_bytes: 5 * 1024 * 1024,
    };
    app.store.record_stats(vec![report]).await.unwrap();
}

/// The device ids a console page links to, in order.
fn device_links(html: &str) -> Vec<String> {
    html.split("<a href=\"/devices/").skip(1).filter_map(|rest| rest.split('"').next()).map(str::to_owned).collect()
}

fn ids(devices: &[Value]) -> Vec<String> {
    devices.iter().map(|d| d["id"].as_str().unwrap().to_owned()).collect()
}

#[tokio::test]
async fn the_devices_page_pages_by_fifty_and_filters_by_owner_and_presence() {
    let (app, mut browser) = console().await;
    let (alice, _) = app.user("alice@example.com", "unprivileged").await;
    let (bob, _) = app.user("bob@example.com", "unprivileged").await;
    let mut all = Vec::new();
    for i in 0..52 {
        all.push(app.device(if i % 4 == 0 { &bob } else { &alice }).await);
    }
    let online = &all[3];
    handshake(&app, online["public_key"].as_str().unwrap(), 10).await;
    handshake(&app, all[5]["public_key"].as_str().unwrap(), 600).await;

    let first = browser.get("/admin/devices").await;
    first.expect_status(StatusCode::OK);
    let html = text(&first);
    let listed = device_links(&html);
    assert_eq!(listed, ids(&all[..50]), "creation order, 50 a page");
    assert!(html.contains("<a href=\"/admin/users/") && html.contains(">alice@example.com</a>"), "{html}");
    assert!(html.contains("1.5 KiB") && html.contains("5.0 MiB") && html.contains("198.51.100.7"), "{html}");
    assert!(html.contains("10 minutes ago") && html.contains(">Online</span>"), "{html}");
    assert!(!html.contains("Add a device for this user"), "only when filtered by a user");
    let next = attribute_after(&html, "<a href=\"/admin/devices?").replace("&#38;", "&");
    let second = text(&browser.get(&format!("/admin/devices?{next}")).await);
    assert_eq!(device_links(&second), ids(&all[50..]));
    assert!(second.contains("First page") && !second.contains("rel=\"next\""), "{second}");

    let online_page = text(&browser.get("/admin/devices?status=online").await);
    assert_eq!(device_links(&online_page), [online["id"].as_str().unwrap()]);
    let offline_page = text(&browser.get("/admin/devices?status=offline").await);
    let offline = device_links(&offline_page);
    assert_eq!(offline.len(), 50);
    assert!(!offline.contains(&online["id"].as_str().unwrap().to_owned()));

    let bobs = text(&browser.get("/admin/devices?user=BOB%40example.com&status=all").await);
    let expected: Vec<Value> = all.iter().filter(|d| d["user_id"] == bob.as_str()).cloned().collect();
    assert_eq!(device_links(&bobs), ids(&expected));
    assert!(bobs.contains(&format!("href=\"/devices/new?user_id={bob}\">Add a device for this user")), "{bobs}");
    let bobs_online = text(&browser.get("/admin/devices?user=bob%40example.com&status=online").await);
    assert!(device_links(&bobs_online).is_empty(), "{bobs_online}");
}

#[tokio::test]
async fn a_bad_devices_filter_is_a_4xx_page_keeping_the_form() {
    let (_app, mut browser) = console().await;
    let unknown = browser.get("/admin/devices?user=nobody%40example.com").await;
    unknown.expect_status(StatusCode::NOT_FOUND);
    let html = text(&unknown);
    assert!(html.contains("No user has this email.") && html.contains("value=\"nobody@example.com\""), "{html}");
    browser.get("/admin/devices?status=sometimes").await.expect_status(StatusCode::BAD_REQUEST);
    browser.get("/admin/devices?after=%20nonsense").await.expect_status(StatusCode::BAD_REQUEST);
    browser.get("/admin/tokens?after=nonsense").await.expect_status(StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn the_device_list_filters_by_presence_in_the_api_too() {
    let app = TestApp::new().await;
    let (alice, _) = app.user("alice@example.com", "unprivileged").await;
    let fresh = app.device(&alice).await;
    let stale = app.device(&alice).await;
    let never = app.device(&app.admin_id).await;
    handshake(&app, fresh["public_key"].as_str().unwrap(), 170).await;
    handshake(&app, stale["public_key"].as_str().unwrap(), 190).await;
    let id = |d: &Value| d["id"].as_str().unwrap().to_owned();

    assert_eq!(app.list_ids("/v0/devices?online=true").await, [id(&fresh)]);
    assert_eq!(app.list_ids("/v0/devices?online=false").await, [id(&stale), id(&never)]);
    let alices_offline = format!("/v0/devices?online=false&user_id={alice}&limit=1");
    let page = app.get(&alices_offline, &app.admin).await;
    page.expect_status(StatusCode::OK);
    assert_eq!(ids(page.data().as_array().unwrap()), [id(&stale)]);
    let cursor = page.body["metadata"]["next_page_cursor"].as_str().unwrap().to_owned();
    let rest = app.list_ids(&format!("{alices_offline}&page_cursor={cursor}")).await;
    assert!(rest.is_empty(), "{rest:?}");
    assert_eq!(app.list_ids("/v0/devices").await.len(), 3, "no filter without the parameter");
    app.get("/v0/devices?online=yes", &app.admin).await.expect_bad_request();
}

#[tokio::test]
async fn every_token_is_listed_for_admins_in_pages() {
    let app = TestApp::new().await;
    let (_, alices) = app.user("alice@example.com", "unprivileged").await;
    let second = app.token("alice@example.com").await;
    let all = app.get("/v0/tokens?all=true", &app.admin).await;
    all.expect_status(StatusCode::OK);
    let data = all.data().as_array().unwrap();
    let emails: Vec<&str> = data.iter().map(|t| t["user_email"].as_str().unwrap()).collect();
    assert_eq!(emails, ["admin@localhost", "alice@example.com", "alice@example.com"]);
    assert_eq!(all.body["metadata"], json!({"limit": 100, "next_page_cursor": null}));

    let first = app.get("/v0/tokens?all=true&limit=2", &app.admin).await;
    let cursor = first.body["metadata"]["next_page_cursor"].as_str().unwrap().to_owned();
    let rest = app.get(&format!("/v0/tokens?all=true&limit=2&page_cursor={cursor}"), &app.admin).await;
    let paged: Vec<Value> =
        first.data().as_array().unwrap().iter().chain(rest.data().as_array().unwrap()).cloned().collect();
    // Compared by id: the admin's token records its use meanwhile.
    assert_eq!(ids(&paged), ids(data));

    app.get("/v0/tokens?all=true", &alices).await.expect_forbidden();
    app.get("/v0/tokens?all=maybe", &app.admin).await.expect_bad_request();
    app.get("/v0/tokens?all=true&limit=0", &app.admin).await.expect_bad_request();
    let own = app.get("/v0/tokens", &second).await;
    own.expect_status(StatusCode::OK);
    assert!(own.body.get("metadata").is_none() && own.data()[0].get("user_email").is_none(), "{}", own.body);
}

#[tokio::test]
async fn the_tokens_page_lists_every_token_and_revokes_one_with_the_csrf_token() {
    let (app, mut browser) = console().await;
    let (_, alices) = app.user("alice@example.com", "unprivileged").await;
    let listed = app.get("/v0/tokens?all=true", &app.admin).await;
    let alices_id = listed.data().as_array().unwrap().iter().find(|t| t["user_email"] == "alice@example.com").unwrap()
        ["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let page = browser.get("/admin/tokens").await;
    page.expect_status(StatusCode::OK);
    let html = text(&page);
    assert!(html.contains(">alice@example.com</a>") && html.contains(">admin@localhost</a>"), "{html}");
    assert!(html.contains(&format!("action=\"/admin/tokens/{alices_id}/revoke\"")), "{html}");

    let path = format!("/admin/tokens/{alices_id}/revoke");
    browser.post_form(&path, &[("csrf_token", "forged")]).await.expect_status(StatusCode::FORBIDDEN);
    app.get("/v0/devices", &alices).await.expect_status(StatusCode::OK);

    let csrf = browser.csrf_token().await;
    let done = browser.post_form(&path, &[("csrf_token", &csrf)]).await;
    done.expect_status(StatusCode::SEE_OTHER);
    assert_eq!(done.header("location"), Some("/admin/tokens?revoked=1"));
    app.get("/v0/devices", &alices).await.expect_auth_error("invalid_token");
    let after = text(&browser.get("/admin/tokens?revoked=1").await);
    assert!(after.contains("The token was revoked.") && !after.contains(&alices_id), "{after}");
}

#[tokio::test]
async fn unprivileged_users_get_403_on_every_console_page_and_the_new_api() {
    let app = TestApp::new().await;
    password_user(&app, "pat@example.com", "unprivileged").await;
    let mut browser = Browser::new(&app);
    browser.sign_in("pat@example.com", PASSWORD, "/").await.expect_status(StatusCode::SEE_OTHER);
    for path in ["/admin/devices", "/admin/tokens", "/admin/settings"] {
        let page = browser.get(path).await;
        page.expect_status(StatusCode::FORBIDDEN);
        assert!(text(&page).contains("Administrators only"), "{path}");
    }
    let csrf = browser.csrf_token().await;
    let token = app.get("/v0/tokens?all=true", &app.admin).await.data()[0]["id"].as_str().unwrap().to_owned();
    let path = format!("/admin/tokens/{token}/revoke");
    browser.post_form(&path, &[("csrf_token", &csrf)]).await.expect_status(StatusCode::FORBIDDEN);
    app.get("/v0/users", &app.admin).await.expect_status(StatusCode::OK);
    let (_, pats) = ("", app.token("pat@example.com").await);
    app.get("/v0/server", &pats).await.expect_forbidden();
    let anonymous = Browser::new(&app).get("/admin/settings").await;
    assert_eq!(anonymous.header("location"), Some("/sign_in?return_to=%2Fadmin%2Fsettings"));
}

/// A data plane that is up and well.
struct Healthy;

impl DataPlaneProbe for Healthy {
    fn health(&self) -> DataPlaneHealth {
        DataPlaneHealth {
            backend: "kernel",
            last_reconcile: Some(SystemTime::now()),
            last_reconcile_failed: false,
            peers_refused: 0,
            routing: RoutingHealth::Applied {
                rules: 2,
                default_action: "accept",
                last_apply: Some(SystemTime::now()),
                last_pass_failed: false,
            },
        }
    }
}

fn setting(group: &str, name: &str, value: &str, source: SettingSource, via: Option<&str>) -> ReportedSetting {
    ReportedSetting { group: group.into(), name: name.into(), value: value.into(), source, via: via.map(str::to_owned) }
}

/// The app served as `serve` would: reached at `external_url`, with a report and `probe`.
fn serving(app: &mut TestApp, external_url: &str, probe: Arc<dyn DataPlaneProbe>) {
    let web = WebSettings {
        external_url: external_url.to_owned(),
        secure_cookies: false,
        providers: Providers::default(),
        saml: Arc::default(),
    };
    let report = ServerReport {
        version: "9.9.9".into(),
        commit: Some("abc1234".into()),
        settings: vec![
            setting("Server", "FERROZONE_EXTERNAL_URL", external_url, SettingSource::Environment, None),
            setting("Tunnel networks", "FERROZONE_WIREGUARD_PORT", "51820", SettingSource::Default, None),
            setting(
                "Defaults for new devices",
                "FERROZONE_DEFAULT_CLIENT_MTU",
                "1400",
                SettingSource::Flag,
                Some("--default-client-mtu"),
            ),
            setting("Defaults for new devices", "FERROZONE_DEFAULT_CLIENT_DNS", "9.9.9.9", SettingSource::File, None),
        ],
    };
    let state = AppState::with_web(app.domain.clone(), web).with_data_plane(probe).with_report(report);
    app.router = crate::helpers::app(state);
}

#[tokio::test]
async fn the_settings_page_shows_each_value_with_its_source_and_no_secret() {
    let (mut app, _) = console().await;
    serving(&mut app, "https://vpn.example.com", Arc::new(Healthy));
    let corp = json!({"id": "corp", "label": "Corp SSO", "client_id": "c", "client_secret": "CLIENT-SECRET-4711",
                      "discovery_document_uri": "http://127.0.0.1:9/.well-known/openid-configuration",
                      "auto_create_users": false});
    let patched = json!({"configuration": {"openid_connect_providers": [corp], "default_client_mtu": 1380}});
    app.patch("/v0/configuration", &app.admin, patched).await.expect_status(StatusCode::OK);
    let mut browser = Browser::new(&app);
    browser.sign_in(ADMIN, PASSWORD, "/").await.expect_status(StatusCode::SEE_OTHER);

    let page = browser.get("/admin/settings").await;
    page.expect_status(StatusCode::OK);
    let html = text(&page);
    assert!(!html.contains("CLIENT-SECRET-4711"), "a secret on the page: {html}");
    for shown in [
        "9.9.9 (commit abc1234)",
        "<caption>Defaults for new devices</caption>",
        "<code>FERROZONE_DEFAULT_CLIENT_MTU</code></th><td>1400</td><td><span class=\"badge source-flag\">flag</span> <span class=\"muted\">(--default-client-mtu)</span>",
        "<code>FERROZONE_DEFAULT_CLIENT_DNS</code></th><td>9.9.9.9</td><td><span class=\"badge source-file\">file</span>",
        "<code>FERROZONE_WIREGUARD_PORT</code></th><td>51820</td><td><span class=\"badge source-default\">default</span>",
        "source-environment\">environment</span>",
        "<th scope=\"row\">Corp SSO</th><td><code>corp</code></td><td>OpenID Connect</td>",
        "name=\"default_client_mtu\" value=\"1380\"",
        ">Healthy</span>",
        "Applied: 2 egress rules",
    ] {
        assert!(html.contains(shown), "{shown} not in {html}");
    }

    let server = app.get("/v0/server", &app.admin).await;
    server.expect_status(StatusCode::OK);
    let data = server.data();
    assert_eq!(data["version"], "9.9.9");
    assert_eq!(data["commit"], "abc1234");
    assert_eq!(data["external_url"], "https://vpn.example.com");
    assert_eq!(
        data["settings"][2],
        json!({"group": "Defaults for new devices", "name": "FERROZONE_DEFAULT_CLIENT_MTU", "value": "1400",
               "source": "flag", "via": "--default-client-mtu"})
    );
    assert_eq!(data["health"]["data_plane"]["backend"], "kernel");
    assert_eq!(data["health"]["status"], "ok");
    assert!(!server.body.to_string().contains("CLIENT-SECRET"));
}

#[tokio::test]
async fn hints_show_until_the_external_url_is_set_and_the_data_plane_runs() {
    let (mut app, mut browser) = console().await;
    let pages = ["/admin/devices", "/admin/tokens", "/admin/settings"];
    for path in pages {
        let html = text(&browser.get(path).await);
        assert!(html.contains("Set the external URL") && html.contains("http://localhost:13000"), "{path}: {html}");
        assert!(html.contains("WireGuard is not running"), "{path}: {html}");
    }
    let settings = text(&browser.get("/admin/settings").await);
    assert!(settings.contains("<span class=\"badge bad\">Not running</span>"), "{settings}");
    assert!(settings.contains("This process did not report its start-up settings."), "{settings}");
    serving(&mut app, "https://vpn.example.com", Arc::new(Healthy));
    let mut browser = Browser::new(&app);
    browser.sign_in(ADMIN, PASSWORD, "/").await.expect_status(StatusCode::SEE_OTHER);
    let mut seen = HashSet::new();
    for path in pages {
        let html = text(&browser.get(path).await);
        assert!(!html.contains("id=\"hints-heading\""), "{path}: {html}");
        seen.insert(path);
    }
    assert_eq!(seen.len(), 3);
}

/// All devices shows traffic as the portal does, from the device's side: the gateway's
/// `tx_bytes` (5 MiB) is what the device downloaded.
#[tokio::test]
async fn the_devices_page_shows_traffic_as_the_device_downloaded_and_uploaded() {
    let (app, mut browser) = console().await;
    let (alice, _) = app.user("alice@example.com", "unprivileged").await;
    let device = app.device(&alice).await;
    handshake(&app, device["public_key"].as_str().unwrap(), 10).await;
    let html = text(&browser.get("/admin/devices").await);
    let head = "<th scope=\"col\" class=\"num\">Downloaded</th><th scope=\"col\" class=\"num\">Uploaded</th>";
    assert!(html.contains(head), "{html}");
    assert!(html.contains("<td class=\"num\">5.0 MiB</td>\n<td class=\"num\">1.5 KiB</td>"), "{html}");
}

/// Issue 35: every runtime key is a field of the Settings page; saving sends only what
/// changed (audited), a key the environment fixes is read-only with its variable, and the
/// domain's messages stand at their fields.
#[tokio::test]
async fn the_runtime_configuration_is_a_form_that_saves_what_changed() {
    let app = TestApp::with_settings(|s| {
        s.configuration.default_client_mtu = Some(1420);
        s.fixed = ferrozone_domain::configuration::Fixed::new([(
            "default_client_mtu".to_owned(),
            "WIREGUARD_MTU".to_owned(),
        )]);
    })
    .await;
    password_user(&app, ADMIN, "admin").await;
    let mut browser = Browser::new(&app);
    browser.sign_in(ADMIN, PASSWORD, "/").await.expect_status(StatusCode::SEE_OTHER);
    let html = text(browser.get("/admin/settings").await.expect_status(StatusCode::OK));
    assert!(
        html.contains("name=\"default_client_mtu\" value=\"1420\" inputmode=\"numeric\" autocomplete=\"off\" disabled"),
        "{html}"
    );
    assert!(html.contains("Set by <code>WIREGUARD_MTU</code>; it cannot be changed here."));
    let token = browser.csrf_token().await;
    let form = |session: &'static str, endpoint: &'static str, keepalive: &'static str| {
        vec![
            ("local_auth_enabled", "on"),
            ("allow_unprivileged_device_management", "on"),
            ("allow_unprivileged_device_configuration", "on"),
            ("disable_vpn_on_oidc_error", "on"),
            ("vpn_session_duration", session),
            ("default_client_persistent_keepalive", keepalive),
            ("default_client_mtu", "9000"),
            ("default_client_endpoint", endpoint),
            ("default_client_dns", "9.9.9.9"),
            ("default_client_allowed_ips", "0.0.0.0/0, ::/0"),
            ("require_totp", "admins"),
            ("egress_default_action", "accept"),
        ]
    };
    let mut bad = form("86400", "not an endpoint", "121");
    bad.push(("csrf_token", &token));
    let html = text(browser.post_form("/admin/settings", &bad).await.expect_status(StatusCode::UNPROCESSABLE_ENTITY));
    assert!(
        html.contains("Default endpoint is invalid")
            && html.contains("Default persistent keepalive (seconds) must be less than or equal to 120"),
        "{html}"
    );
    assert!(html.contains("value=\"not an endpoint\""), "the values are kept");
    let before = app.get("/v0/configuration", &app.admin).await.data().clone();
    assert_eq!(before["vpn_session_duration"], 0, "nothing saved");

    let mut good = form("86400", "localhost:51820", "25");
    good.push(("csrf_token", &token));
    let saved = browser.post_form("/admin/settings", &good).await;
    assert_eq!(
        saved.expect_status(StatusCode::SEE_OTHER).header("location"),
        Some("/admin/settings?saved=1#runtime-heading")
    );
    let now = app.get("/v0/configuration", &app.admin).await.data().clone();
    assert_eq!(
        (&now["vpn_session_duration"], &now["default_client_dns"], &now["require_totp"], &now["default_client_mtu"]),
        (&json!(86400), &json!(["9.9.9.9"]), &json!("admins"), &json!(1420)),
        "the changed keys; the fixed one untouched whatever the form said"
    );
    let events = app.get("/v0/audit_events?action=configuration.", &app.admin).await.data().clone();
    let changed: Vec<&str> =
        events[0]["changes"].as_array().unwrap().iter().filter_map(|c| c["field"].as_str()).collect();
    assert_eq!(changed, ["vpn_session_duration", "default_client_dns", "require_totp"], "{events}");
}
