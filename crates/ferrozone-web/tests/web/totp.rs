//! Two-factor sign-in (docs/design/sign-in.md, "Two-factor sign-in"; docs/web.md): setting an
//! authenticator up on the account page and through `/v0/me/totp`, the second step of a
//! password sign-in, one use per code, recovery codes, the throttle, `require_totp`, an
//! admin's reset, and CSRF refusals.

use axum::http::{Method, StatusCode};
use ferrozone_domain::crypto::totp::{base32_decode, code_at_step, step_at};
use ferrozone_domain::Timestamp;
use serde_json::{json, Value};

use crate::helpers::TestApp;
use crate::signin::{attribute_after, password_user, set_cookies, text, Browser, PASSWORD};

const SECRET_MARKER: &str = "<code class=\"totp-secret\" id=\"totp-secret\">";

fn now_step() -> i64 {
    step_at(Timestamp::now().micros() / 1_000_000)
}

/// The code of `secret` (base32) for `step`.
fn code(secret: &str, step: i64) -> String {
    code_at_step(&base32_decode(secret).unwrap(), step)
}

/// The base32 key a set-up page shows.
fn secret_on(html: &str) -> String {
    let start = html.find(SECRET_MARKER).unwrap_or_else(|| panic!("no key in {html}")) + SECRET_MARKER.len();
    html[start..].split('<').next().unwrap().to_owned()
}

/// The recovery codes a page shows.
fn recovery_codes_on(html: &str) -> Vec<String> {
    let list = html.split("<ol class=\"recovery-codes\">").nth(1).expect("a list of codes");
    let list = list.split("</ol>").next().unwrap();
    list.split("<li><code>").skip(1).map(|item| item.split('<').next().unwrap().to_owned()).collect()
}

/// A signed-in browser of a new unprivileged password user.
async fn signed_in(app: &TestApp, email: &str) -> (Browser, String) {
    let id = password_user(app, email, "unprivileged").await;
    let mut browser = Browser::new(app);
    browser.sign_in(email, PASSWORD, "/").await.expect_status(StatusCode::SEE_OTHER);
    (browser, id)
}

/// Sets an authenticator up on the account page; returns its key, the step whose code
/// confirmed it, and the recovery codes.
async fn enrol_on_page(browser: &mut Browser) -> (String, i64, Vec<String>) {
    let csrf = browser.csrf_token().await;
    let page = browser.get("/account/two_factor").await;
    page.expect_status(StatusCode::OK);
    assert!(text(&page).contains("action=\"/account/two_factor/start\""));
    let setup = browser.post_form("/account/two_factor/start", &[("csrf_token", &csrf)]).await;
    setup.expect_status(StatusCode::OK);
    let html = text(&setup);
    assert!(html.contains("<img src=\"data:image/png;base64,"), "a QR code: {html}");
    let secret = secret_on(&html);
    let step = now_step();
    let confirmed = browser
        .post_form("/account/two_factor/confirm", &[("csrf_token", &csrf), ("code", &code(&secret, step))])
        .await;
    confirmed.expect_status(StatusCode::OK);
    let codes = recovery_codes_on(&text(&confirmed));
    assert_eq!(codes.len(), 10);
    (secret, step, codes)
}

/// Signs out and in with the password: the browser then waits for its code.
async fn password_step(browser: &mut Browser, email: &str, return_to: &str) {
    browser.session = None;
    let res = browser.sign_in(email, PASSWORD, return_to).await;
    res.expect_status(StatusCode::SEE_OTHER);
    assert_eq!(res.header("location"), Some("/sign_in/code"));
    assert!(set_cookies(&res).iter().all(|(name, _)| name != "ferrozone_session"), "no session yet");
    assert!(browser.pending.is_some(), "a pending sign-in cookie");
}

/// `POST /sign_in/code` with the page's form token.
async fn send_code(browser: &mut Browser, code: &str) -> crate::helpers::TestResponse {
    let page = browser.get("/sign_in/code").await;
    page.expect_status(StatusCode::OK);
    let token = attribute_after(&text(&page), "name=\"csrf_token\" value=\"");
    browser.post_form("/sign_in/code", &[("csrf_token", &token), ("code", code)]).await
}

#[tokio::test]
async fn enrol_then_sign_in_with_a_code_each_code_once() {
    let app = TestApp::new().await;
    let (mut browser, id) = signed_in(&app, "pat@example.com").await;
    let (secret, step, _) = enrol_on_page(&mut browser).await;
    let status = text(&browser.get("/account/two_factor").await);
    assert!(status.contains("<span class=\"badge ok\">On</span>") && !status.contains(&secret), "{status}");

    password_step(&mut browser, "pat@example.com", "/devices?x=1").await;
    let wrong = send_code(&mut browser, &code(&secret, step - 5)).await;
    wrong.expect_status(StatusCode::UNAUTHORIZED);
    assert!(text(&wrong).contains("That code is incorrect or was already used."));
    assert!(browser.session.is_none());
    // The code that confirmed the set-up was used.
    send_code(&mut browser, &code(&secret, step)).await.expect_status(StatusCode::UNAUTHORIZED);

    let next = code(&secret, step + 1);
    let res = send_code(&mut browser, &next).await;
    res.expect_status(StatusCode::SEE_OTHER);
    assert_eq!(res.header("location"), Some("/devices?x=1"));
    assert!(browser.session.is_some() && browser.pending.is_none(), "a session, the pending cookie cleared");
    assert_eq!(app.show_user(&id).await["last_signed_in_method"], "password");
    browser.get("/account/two_factor").await.expect_status(StatusCode::OK);

    password_step(&mut browser, "pat@example.com", "/").await;
    send_code(&mut browser, &next).await.expect_status(StatusCode::UNAUTHORIZED);
    assert!(browser.session.is_none(), "the same code twice is refused");
}

#[tokio::test]
async fn a_recovery_code_signs_in_once_and_new_codes_replace_them() {
    let app = TestApp::new().await;
    let (mut browser, _) = signed_in(&app, "pat@example.com").await;
    let (secret, step, codes) = enrol_on_page(&mut browser).await;

    password_step(&mut browser, "pat@example.com", "/").await;
    send_code(&mut browser, &codes[0].to_uppercase()).await.expect_status(StatusCode::SEE_OTHER);
    password_step(&mut browser, "pat@example.com", "/").await;
    send_code(&mut browser, &codes[0]).await.expect_status(StatusCode::UNAUTHORIZED);
    send_code(&mut browser, &codes[1]).await.expect_status(StatusCode::SEE_OTHER);
    assert!(text(&browser.get("/account/two_factor").await).contains("<dd>8</dd>"), "8 left");

    let csrf = browser.csrf_token().await;
    let fields = [("csrf_token", csrf.as_str()), ("code", "000000")];
    browser
        .post_form("/account/two_factor/recovery_codes", &fields)
        .await
        .expect_status(StatusCode::UNPROCESSABLE_ENTITY);
    let fields = [("csrf_token", csrf.as_str()), ("code", &code(&secret, step + 1))];
    let fresh = browser.post_form("/account/two_factor/recovery_codes", &fields).await;
    fresh.expect_status(StatusCode::OK);
    let fresh = recovery_codes_on(&text(&fresh));
    assert_eq!(fresh.len(), 10);
    password_step(&mut browser, "pat@example.com", "/").await;
    send_code(&mut browser, &codes[2]).await.expect_status(StatusCode::UNAUTHORIZED);
    send_code(&mut browser, &fresh[0]).await.expect_status(StatusCode::SEE_OTHER);
}

#[tokio::test]
async fn wrong_codes_count_against_the_sign_in_throttle() {
    let app = TestApp::new().await;
    let (mut browser, _) = signed_in(&app, "pat@example.com").await;
    let (secret, step, _) = enrol_on_page(&mut browser).await;
    password_step(&mut browser, "pat@example.com", "/").await;
    for _ in 0..5 {
        send_code(&mut browser, "000000").await.expect_status(StatusCode::UNAUTHORIZED);
    }
    let refused = send_code(&mut browser, &code(&secret, step + 1)).await;
    refused.expect_status(StatusCode::TOO_MANY_REQUESTS);
    assert!(refused.header("retry-after").is_some());
    assert!(text(&refused).contains("Too many wrong codes"));
    assert!(browser.session.is_none());
}

#[tokio::test]
async fn the_second_step_needs_its_cookie_and_the_form_token() {
    let app = TestApp::new().await;
    let (mut browser, _) = signed_in(&app, "pat@example.com").await;
    let (secret, step, _) = enrol_on_page(&mut browser).await;
    password_step(&mut browser, "pat@example.com", "/").await;
    let forged =
        browser.post_form("/sign_in/code", &[("csrf_token", "forged"), ("code", &code(&secret, step + 1))]).await;
    forged.expect_status(StatusCode::FORBIDDEN);
    assert!(browser.session.is_none());

    browser.pending = Some("forged".into());
    let res = browser.get("/sign_in/code").await;
    res.expect_status(StatusCode::SEE_OTHER);
    assert_eq!(res.header("location"), Some("/sign_in"));
    browser.pending = None;
    browser.get("/sign_in/code").await.expect_status(StatusCode::SEE_OTHER);
}

#[tokio::test]
async fn account_forms_without_the_session_csrf_token_change_nothing() {
    let app = TestApp::new().await;
    let (mut browser, id) = signed_in(&app, "pat@example.com").await;
    for path in ["/account/two_factor/start", "/account/two_factor/confirm", "/account/two_factor/turn_off"] {
        browser
            .post_form(path, &[("csrf_token", "forged"), ("code", "123456")])
            .await
            .expect_status(StatusCode::FORBIDDEN);
    }
    let token = app.token("pat@example.com").await;
    let status = app.get("/v0/me/totp", &token).await;
    status.expect(
        StatusCode::OK,
        json!({"data": {"enrolled": false, "since": null, "recovery_codes_left": 0, "required": false}}),
    );
    assert!(app.store.totp_of(id.parse().unwrap()).await.unwrap().is_none(), "no secret made");
}

#[tokio::test]
async fn turning_off_takes_a_code_or_the_password() {
    let app = TestApp::new().await;
    let (mut browser, _) = signed_in(&app, "pat@example.com").await;
    enrol_on_page(&mut browser).await;
    let csrf = browser.csrf_token().await;
    let wrong = [("csrf_token", csrf.as_str()), ("code", ""), ("password", "wrong")];
    browser.post_form("/account/two_factor/turn_off", &wrong).await.expect_status(StatusCode::UNPROCESSABLE_ENTITY);
    let right = [("csrf_token", csrf.as_str()), ("code", ""), ("password", PASSWORD)];
    let res = browser.post_form("/account/two_factor/turn_off", &right).await;
    res.expect_status(StatusCode::SEE_OTHER);
    assert!(text(&browser.get("/account/two_factor").await).contains("<span class=\"badge bad\">Off</span>"));
    browser.session = None;
    browser.sign_in("pat@example.com", PASSWORD, "/").await.expect_status(StatusCode::SEE_OTHER);
    assert!(browser.session.is_some(), "no code asked any more");
}

#[tokio::test]
async fn required_for_admins_forces_set_up_at_sign_in() {
    let app = TestApp::new().await;
    let patch = json!({"configuration": {"require_totp": "admins"}});
    app.patch("/v0/configuration", &app.admin, patch).await.expect_status(StatusCode::OK);
    let bad = json!({"configuration": {"require_totp": "sometimes"}});
    app.patch("/v0/configuration", &app.admin, bad)
        .await
        .expect_errors(json!({"require_totp": ["must be one of: off, admins, everyone"]}));
    password_user(&app, "boss@example.com", "admin").await;
    password_user(&app, "pat@example.com", "unprivileged").await;

    let mut pat = Browser::new(&app);
    pat.sign_in("pat@example.com", PASSWORD, "/").await.expect_status(StatusCode::SEE_OTHER);
    assert!(pat.session.is_some(), "not required of unprivileged users");

    let mut boss = Browser::on(app.router.clone(), "192.0.2.20:40000");
    password_step(&mut boss, "boss@example.com", "/devices").await;
    let page = boss.get("/sign_in/code").await;
    page.expect_status(StatusCode::OK);
    let html = text(&page);
    assert!(html.contains("Set up two-factor sign-in") && html.contains("data:image/png;base64,"), "{html}");
    let secret = secret_on(&html);
    assert_eq!(secret_on(&text(&boss.get("/sign_in/code").await)), secret, "the same pending key on reload");
    send_code(&mut boss, "000000").await.expect_status(StatusCode::UNAUTHORIZED);
    let done = send_code(&mut boss, &code(&secret, now_step())).await;
    done.expect_status(StatusCode::OK);
    let html = text(&done);
    assert_eq!(recovery_codes_on(&html).len(), 10);
    assert!(html.contains("href=\"/devices\""), "{html}");
    assert!(boss.session.is_some() && boss.pending.is_none(), "signed in after the set-up");

    let csrf = boss.csrf_token().await;
    let off = [("csrf_token", csrf.as_str()), ("password", PASSWORD)];
    let refused = boss.post_form("/account/two_factor/turn_off", &off).await;
    refused.expect_status(StatusCode::FORBIDDEN);
    assert!(text(&refused).contains("requires two-factor sign-in"));
}

#[tokio::test]
async fn the_api_sets_up_confirms_and_turns_off() {
    let app = TestApp::new().await;
    let (id, token) = app.user("pat@example.com", "unprivileged").await;
    let started = app.post("/v0/me/totp", &token, json!({})).await;
    started.expect_status(StatusCode::CREATED);
    let first = started.data()["secret"].as_str().unwrap().to_owned();
    let started = app.post("/v0/me/totp", &token, json!({})).await;
    let secret = started.data()["secret"].as_str().unwrap().to_owned();
    assert_ne!(first, secret, "a set-up never confirmed is replaced");
    let uri = started.data()["uri"].as_str().unwrap();
    assert_eq!(
        uri,
        format!("otpauth://totp/Ferrozone:pat@example.com?secret={secret}&issuer=Ferrozone&algorithm=SHA1&digits=6&period=30")
    );
    let pending = app.get("/v0/me/totp", &token).await;
    assert_eq!(pending.data()["enrolled"], false, "pending does not count");

    let step = now_step();
    let wrong = app.post("/v0/me/totp/confirm", &token, json!({"code": code(&first, step)})).await;
    wrong.expect_errors(json!({"code": ["is incorrect or was already used"]}));
    let confirmed = app.post("/v0/me/totp/confirm", &token, json!({"code": code(&secret, step)})).await;
    confirmed.expect_status(StatusCode::OK);
    assert_eq!(confirmed.data()["recovery_codes"].as_array().unwrap().len(), 10);
    let status = app.get("/v0/me/totp", &token).await;
    assert_eq!(status.data()["enrolled"], true);
    assert_eq!(status.data()["recovery_codes_left"], 10);
    crate::helpers::assert_timestamp(&status.data()["since"]);
    app.post("/v0/me/totp", &token, json!({}))
        .await
        .expect_errors(json!({"totp": ["is already set up; turn it off first"]}));

    let wrong = app.post("/v0/me/totp/recovery_codes", &token, json!({"code": code(&first, step + 1)})).await;
    wrong.expect_errors(json!({"code": ["is incorrect or was already used"]}));
    let renewed = app.post("/v0/me/totp/recovery_codes", &token, json!({"code": code(&secret, step + 1)})).await;
    renewed.expect_status(StatusCode::OK);
    let recovery: Vec<Value> = renewed.data()["recovery_codes"].as_array().unwrap().clone();
    let wrong = app.request(Method::DELETE, "/v0/me/totp", Some(&token), Some(json!({"code": "000000"}))).await;
    wrong.expect_errors(json!({"code": ["or password is incorrect"]}));
    let off = app.request(Method::DELETE, "/v0/me/totp", Some(&token), Some(json!({"code": recovery[0]}))).await;
    off.expect_status(StatusCode::NO_CONTENT);
    assert!(app.store.totp_of(id.parse().unwrap()).await.unwrap().is_none());
    let admin_view = app.get(&format!("/v0/users/{id}/totp"), &app.admin).await;
    assert_eq!(admin_view.data()["enrolled"], false);
}

#[tokio::test]
async fn an_admin_resets_a_user_who_lost_the_authenticator() {
    let app = TestApp::new().await;
    let (mut browser, id) = signed_in(&app, "pat@example.com").await;
    enrol_on_page(&mut browser).await;
    let (_, other) = app.user("sam@example.com", "unprivileged").await;
    app.delete(&format!("/v0/users/{id}/totp"), &other).await.expect_forbidden();
    app.get(&format!("/v0/users/{id}/totp"), &other).await.expect_forbidden();
    let shown = app.get(&format!("/v0/users/{id}/totp"), &app.admin).await;
    assert_eq!(shown.data()["enrolled"], true);
    let status =
        app.domain.totp_status_of(&ferrozone_domain::Principal::operator(), id.parse().unwrap()).await.unwrap();
    assert!(status.enrolled && status.recovery_codes_left == 10);

    app.delete(&format!("/v0/users/{id}/totp"), &app.admin).await.expect_status(StatusCode::NO_CONTENT);
    app.delete("/v0/users/00000000-0000-0000-0000-000000000000/totp", &app.admin).await.expect_not_found();
    browser.get("/account/two_factor").await.expect_status(StatusCode::OK);
    browser.session = None;
    browser.sign_in("pat@example.com", PASSWORD, "/").await.expect_status(StatusCode::SEE_OTHER);
    assert!(browser.session.is_some(), "no code asked after the reset");
}

#[tokio::test]
async fn wrong_codes_are_recorded_by_their_kind() {
    use crate::audit::{assert_refused, recorded, refused_sign_ins};
    let app = TestApp::new().await;
    let (mut browser, id) = signed_in(&app, "pat@example.com").await;
    let (_, _, codes) = enrol_on_page(&mut browser).await;
    password_step(&mut browser, "pat@example.com", "/").await;
    send_code(&mut browser, &codes[0]).await.expect_status(StatusCode::SEE_OTHER);

    password_step(&mut browser, "pat@example.com", "/").await;
    send_code(&mut browser, &codes[0]).await.expect_status(StatusCode::UNAUTHORIZED);
    send_code(&mut browser, "000000").await.expect_status(StatusCode::UNAUTHORIZED);
    let events = refused_sign_ins(&app).await;
    assert_eq!(events.len(), 2, "{events:?}");
    assert_refused(&events[0], Some(&id), "totp", "bad_code");
    assert_refused(&events[1], Some(&id), "recovery_code", "bad_code");
    assert_eq!(recorded(&events[1], "account"), Value::Null, "the account exists: no typed account");
    assert!(!events[1].to_string().contains(&codes[0]), "never the code");
}

/// The account page says whether two-factor sign-in is on (docs/web.md, "Account").
#[tokio::test]
async fn the_account_page_says_whether_two_factor_sign_in_is_on() {
    let app = TestApp::new().await;
    let (mut browser, _) = signed_in(&app, "pat@example.com").await;
    let off = text(&browser.get("/account").await);
    assert!(off.contains("<dt>Two-factor sign-in</dt><dd><span class=\"badge bad\">Off</span></dd>"), "{off}");
    enrol_on_page(&mut browser).await;
    let on = text(&browser.get("/account").await);
    let today = Timestamp::now().to_string().chars().take(10).collect::<String>();
    let expected = format!("<dt>Two-factor sign-in</dt><dd><span class=\"badge ok\">On</span> since {today}</dd>");
    assert!(on.contains(&expected), "{on}");
}
