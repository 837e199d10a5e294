//! Sign-in throttling (docs/design/sign-in.md, "Sign-in and sessions"): attempts are counted
//! before the password is checked, per account and client network (an IPv6 /64), and per
//! account across networks.

use axum::http::StatusCode;
use futures_util::future::join_all;

use super::{password_user, text, Browser, PASSWORD};
use crate::helpers::TestApp;

const WRONG: &str = "wrong password entirely";

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_burst_of_concurrent_guesses_is_evaluated_at_most_five_times() {
    let app = TestApp::new().await;
    password_user(&app, "pat@example.com", "admin").await;
    let mut browser = Browser::new(&app);
    browser.get("/sign_in").await.expect_status(StatusCode::OK);
    let token = browser.form_cookie.clone().unwrap();
    let guesses = (0..100).map(|_| {
        let mut guesser = Browser::new(&app);
        guesser.form_cookie = Some(token.clone());
        let token = token.clone();
        tokio::spawn(async move {
            let fields = [("email", "pat@example.com"), ("password", WRONG), ("csrf_token", token.as_str())];
            let res = guesser.post_form("/sign_in", &fields).await;
            (res.status, res.header("retry-after").is_some())
        })
    });
    let answers: Vec<_> = join_all(guesses).await.into_iter().map(Result::unwrap).collect();
    let evaluated = answers.iter().filter(|(status, _)| *status == StatusCode::UNAUTHORIZED).count();
    let throttled = answers.iter().filter(|(status, retry)| *status == StatusCode::TOO_MANY_REQUESTS && *retry);
    assert_eq!(evaluated, 5, "{answers:?}");
    assert_eq!(throttled.count(), 95, "{answers:?}");

    let res = browser.sign_in("pat@example.com", PASSWORD, "").await;
    res.expect_status(StatusCode::TOO_MANY_REQUESTS);
    assert!(browser.session.is_none(), "the right password after the budget does not sign in");
}

#[tokio::test]
async fn ipv6_clients_are_counted_by_their_64() {
    let app = TestApp::new().await;
    password_user(&app, "pat@example.com", "admin").await;
    for host in 1..=5 {
        let mut guesser = Browser::on(app.router.clone(), &format!("[2001:db8:1:2::{host}]:1"));
        guesser.sign_in("pat@example.com", WRONG, "").await.expect_status(StatusCode::UNAUTHORIZED);
    }
    let mut same_64 = Browser::on(app.router.clone(), "[2001:db8:1:2:ffff:ffff:ffff:ffff]:1");
    let res = same_64.sign_in("pat@example.com", PASSWORD, "").await;
    res.expect_status(StatusCode::TOO_MANY_REQUESTS);
    assert!(same_64.session.is_none());
    let mut next_64 = Browser::on(app.router.clone(), "[2001:db8:1:3::1]:1");
    next_64.sign_in("pat@example.com", PASSWORD, "").await.expect_status(StatusCode::SEE_OTHER);
}

#[tokio::test]
async fn the_account_budget_slows_sign_in_down_across_addresses() {
    let app = TestApp::with_settings(|s| s.passwords.account_burst = 3).await;
    password_user(&app, "pat@example.com", "admin").await;
    password_user(&app, "kim@example.com", "admin").await;
    for i in 1..=3 {
        let mut guesser = Browser::on(app.router.clone(), &format!("198.51.100.{i}:1"));
        guesser.sign_in("pat@example.com", WRONG, "").await.expect_status(StatusCode::UNAUTHORIZED);
    }
    let mut owner = Browser::on(app.router.clone(), "203.0.113.9:1");
    let res = owner.sign_in("Pat@example.com", PASSWORD, "").await;
    res.expect_status(StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(res.header("retry-after"), Some("30"), "one attempt comes back every 30 s");
    assert!(text(&res).contains("Too many sign-in attempts for this account"));
    assert!(owner.session.is_none());
    owner.sign_in("kim@example.com", PASSWORD, "").await.expect_status(StatusCode::SEE_OTHER);
}
