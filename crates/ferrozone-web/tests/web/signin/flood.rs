//! One client cannot make password sign-in unavailable for everyone (docs/design/sign-in.md,
//! "Throttling" and "Password work at capacity"): a budget of password checks per client
//! network across accounts, counted before the check, and a reserve of the password gate
//! that checks against the dummy hash (unknown accounts) cannot take.

use std::sync::mpsc;

use axum::http::{Method, Request, StatusCode};
use serde_json::json;
use tokio::task::JoinHandle;

use super::{password_user, text, Browser, PASSWORD};
use crate::helpers::{TestApp, TestResponse};

const WRONG: &str = "wrong password entirely";
const NETWORK_THROTTLED: &str = "Too many sign-in attempts from your network";

/// Holds the password gate's one thread until the sender is dropped or sent to.
async fn hold_the_gate(app: &TestApp) -> (mpsc::Sender<()>, JoinHandle<()>) {
    let (release, held) = mpsc::channel::<()>();
    let domain = app.domain.clone();
    let before = app.domain.password_gate().admitted();
    let hold = move || {
        let _ = held.recv();
    };
    let holder = tokio::spawn(async move { domain.password_gate().run(hold).await.unwrap() });
    while app.domain.password_gate().admitted() == before {
        tokio::task::yield_now().await;
    }
    (release, holder)
}

fn retry_after(res: &TestResponse) -> u64 {
    res.header("retry-after").and_then(|secs| secs.parse().ok()).expect("a Retry-After in seconds")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_network_spraying_unknown_emails_is_refused_before_any_hash_while_others_sign_in() {
    let app = TestApp::with_settings(|s| {
        s.passwords.network_burst = 3;
        s.passwords.network_refill_secs = 2;
        s.passwords.hash_concurrency = 1;
        s.passwords.hash_queue = 0;
    })
    .await;
    password_user(&app, "pat@example.com", "admin").await;
    let mut sprayer = Browser::on(app.router.clone(), "198.51.100.7:1000");
    sprayer.allow_5xx = true;
    for i in 0..3 {
        let res = sprayer.sign_in(&format!("made-up-{i}@example.com"), WRONG, "").await;
        res.expect_status(StatusCode::UNAUTHORIZED);
    }

    // With the one password thread held, an attempt that reached it would be a 503.
    let (release, holder) = hold_the_gate(&app).await;
    for i in 3..10 {
        let mut same_address = Browser::on(app.router.clone(), &format!("198.51.100.7:{}", 1000 + i));
        same_address.allow_5xx = true;
        let res = same_address.sign_in(&format!("made-up-{i}@example.com"), WRONG, "").await;
        res.expect_status(StatusCode::TOO_MANY_REQUESTS);
        assert!((1..=2).contains(&retry_after(&res)), "one attempt comes back every 2 s");
        assert!(text(&res).contains(NETWORK_THROTTLED), "the sign-in page says why");
    }
    let res = sprayer.sign_in("pat@example.com", PASSWORD, "").await;
    res.expect_status(StatusCode::TOO_MANY_REQUESTS);
    assert!(sprayer.session.is_none(), "not checked, so not signed in");
    release.send(()).unwrap();
    holder.await.unwrap();

    let mut owner = Browser::on(app.router.clone(), "203.0.113.9:1");
    owner.sign_in("pat@example.com", PASSWORD, "").await.expect_status(StatusCode::SEE_OTHER);
}

/// A sign-in posted from `address` in a task of its own (its form fetched first).
async fn sign_in_in_background(app: &TestApp, address: &str, email: &str, password: &str) -> JoinHandle<StatusCode> {
    let mut browser = Browser::on(app.router.clone(), address);
    browser.allow_5xx = true;
    browser.get("/sign_in").await.expect_status(StatusCode::OK);
    let (email, password) = (email.to_owned(), password.to_owned());
    tokio::spawn(async move {
        let token = browser.form_cookie.clone().unwrap();
        let fields = [("email", email.as_str()), ("password", password.as_str()), ("csrf_token", &token)];
        browser.post_form("/sign_in", &fields).await.status
    })
}

/// Waits until `task` has ended or the password gate has admitted `admitted` operations.
async fn until_done_or_admitted(app: &TestApp, task: &JoinHandle<StatusCode>, admitted: usize) {
    while !task.is_finished() && app.domain.password_gate().admitted() < admitted {
        tokio::task::yield_now().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn unknown_emails_cannot_take_the_reserve_kept_for_accounts_with_a_password() {
    let app = TestApp::with_settings(|s| {
        s.passwords.hash_concurrency = 1;
        s.passwords.hash_queue = 2;
        s.passwords.hash_reserve = 1;
    })
    .await;
    password_user(&app, "pat@example.com", "admin").await;
    let (release, holder) = hold_the_gate(&app).await;

    let first = sign_in_in_background(&app, "198.51.100.1:1", "made-up-1@example.com", WRONG).await;
    until_done_or_admitted(&app, &first, 2).await;
    let second = sign_in_in_background(&app, "198.51.100.2:1", "made-up-2@example.com", WRONG).await;
    until_done_or_admitted(&app, &second, 3).await;
    let genuine = sign_in_in_background(&app, "203.0.113.9:1", "pat@example.com", PASSWORD).await;
    until_done_or_admitted(&app, &genuine, 3).await;
    release.send(()).unwrap();
    holder.await.unwrap();

    let answers = [first.await.unwrap(), second.await.unwrap(), genuine.await.unwrap()];
    assert_eq!(
        answers,
        [StatusCode::UNAUTHORIZED, StatusCode::SERVICE_UNAVAILABLE, StatusCode::SEE_OTHER],
        "the unknown email waits in the shared place, the next is refused, the account takes the reserve"
    );
}

#[tokio::test]
async fn a_password_change_is_counted_by_the_network_budget_too() {
    let app = TestApp::with_settings(|s| s.passwords.network_burst = 2).await;
    password_user(&app, "pat@example.com", "unprivileged").await;
    let mut pat = Browser::on(app.router.clone(), "192.0.2.77:1");
    pat.sign_in("pat@example.com", PASSWORD, "/").await.expect_status(StatusCode::SEE_OTHER);
    let csrf = pat.csrf_token().await;
    let mut sprayer = Browser::on(app.router.clone(), "192.0.2.77:2");
    for i in 0..2 {
        sprayer.sign_in(&format!("made-up-{i}@example.com"), WRONG, "").await.expect_status(StatusCode::UNAUTHORIZED);
    }

    let new = "another long password";
    let body = json!({"current_password": PASSWORD, "password": new, "password_confirmation": new});
    let req = Request::builder()
        .method(Method::POST)
        .uri("/v0/me/password")
        .header("x-csrf-token", &csrf)
        .header("content-type", "application/json");
    let res = pat.send(req, body.to_string().into()).await;
    res.expect(
        StatusCode::TOO_MANY_REQUESTS,
        json!({"error": "too_many_requests", "message": "Too many password attempts from your network. Please wait and try again."}),
    );
    assert!(retry_after(&res) >= 1);

    let fields = [
        ("csrf_token", csrf.as_str()),
        ("current_password", PASSWORD),
        ("password", new),
        ("password_confirmation", new),
    ];
    let res = pat.post_form("/account/password", &fields).await;
    res.expect_status(StatusCode::TOO_MANY_REQUESTS);
    assert!(retry_after(&res) >= 1);
    assert!(text(&res).contains("Too many password attempts from your network"));
}
