//! Issue 35: `GET /v0/rules/check`, the access checker (docs/design/egress-rules.md, "Check
//! access"): Firezone's precedence over stored rules, the default action in effect, a
//! disabled user, every parameter checked at its name, admins only.

use axum::http::StatusCode;
use serde_json::{json, Value};

use crate::helpers::{TestApp, TestResponse};

async fn rule(app: &TestApp, attrs: Value) -> String {
    let res = app.post("/v0/rules", &app.admin, json!({ "rule": attrs })).await;
    res.expect_status(StatusCode::CREATED).id()
}

async fn check(app: &TestApp, query: &str) -> TestResponse {
    app.get(&format!("/v0/rules/check?{query}"), &app.admin).await
}

/// `(action, decided_by, rule id or "")` of an answer that must be a 200.
async fn answer(app: &TestApp, query: &str) -> (String, String, String) {
    let res = check(app, query).await;
    let data = res.expect_status(StatusCode::OK).data();
    let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    (text(&data["action"]), text(&data["decided_by"]), text(&data["rule"]["id"]))
}

fn decided(action: &str, by: &str, rule: &str) -> (String, String, String) {
    (action.to_owned(), by.to_owned(), rule.to_owned())
}

#[tokio::test]
async fn the_checker_answers_with_firezones_precedence_and_names_the_deciding_rule() {
    let app = TestApp::new().await;
    let (alice, _) = app.user("alice@example.com", "unprivileged").await;
    let device = app.device(&alice).await;
    let device_id = device["id"].as_str().unwrap();
    let drop_all = rule(&app, json!({"destination": "0.0.0.0/0", "action": "drop"})).await;
    let accept_lan = rule(&app, json!({"destination": "10.0.0.0/8", "action": "accept"})).await;
    let alice_ssh =
        rule(&app, json!({"destination": "10.1.0.0/16", "action": "drop", "user_id": alice, "port_type": "tcp", "port_range": "22"}))
            .await;

    let user = format!("user_id={alice}");
    let for_device = format!("device_id={device_id}");
    let cases = [
        (format!("{user}&destination=192.0.2.1&protocol=tcp&port=443"), decided("drop", "rule", &drop_all)),
        (format!("{user}&destination=10.9.9.9&protocol=icmp"), decided("accept", "rule", &accept_lan)),
        (format!("{for_device}&destination=10.1.2.3&protocol=tcp&port=22"), decided("drop", "rule", &alice_ssh)),
        (format!("{for_device}&destination=10.1.2.3&protocol=udp&port=22"), decided("accept", "rule", &accept_lan)),
        (format!("{user}&destination=2001:db8::1&protocol=udp&port=53"), decided("accept", "default_action", "")),
    ];
    for (query, expected) in &cases {
        assert_eq!(&answer(&app, query).await, expected, "{query}");
    }
    let res = check(&app, &cases[2].0).await;
    let data = res.data();
    assert_eq!((&data["user_id"], &data["device_id"]), (&json!(alice), &json!(device_id)));
    assert_eq!(data["explanation"], "Dropped by the user's rule drop 10.1.0.0/16, TCP 22.");

    let body = json!({"configuration": {"egress_default_action": "drop"}});
    app.patch("/v0/configuration", &app.admin, body).await.expect_status(StatusCode::OK);
    let query = format!("{user}&destination=2001:db8::1&protocol=udp&port=53");
    assert_eq!(answer(&app, &query).await, decided("drop", "default_action", ""), "the default in effect");

    app.post(&format!("/v0/users/{alice}/disable"), &app.admin, json!({})).await.expect_status(StatusCode::OK);
    let query = format!("{for_device}&destination=10.9.9.9&protocol=icmp");
    assert_eq!(answer(&app, &query).await, decided("drop", "user_disabled", ""), "a disabled user's devices are off");
}

#[tokio::test]
async fn every_parameter_is_checked_at_its_name_and_only_admins_ask() {
    let app = TestApp::new().await;
    let (bob, token) = app.user("bob@example.com", "unprivileged").await;
    let good = format!("user_id={bob}&destination=10.0.0.1&protocol=tcp&port=80");
    app.get(&format!("/v0/rules/check?{good}"), &token).await.expect_forbidden();
    app.get(&format!("/v0/rules/check?{good}"), "fz_not_a_token").await.expect_status(StatusCode::UNAUTHORIZED);
    check(&app, &good).await.expect_status(StatusCode::OK);

    check(&app, "").await.expect_errors(json!({
        "user_id": ["name a user or a device"],
        "destination": ["can't be blank"],
        "protocol": ["can't be blank"],
    }));
    let unknown = uuid::Uuid::now_v7();
    let cases = [
        (format!("user_id={unknown}&destination=10.0.0.1&protocol=icmp"), json!({"user_id": ["does not exist"]})),
        (format!("device_id={unknown}&destination=10.0.0.1&protocol=icmp"), json!({"device_id": ["does not exist"]})),
        (
            format!("user_id={bob}&device_id={unknown}&destination=10.0.0.1&protocol=icmp"),
            json!({"device_id": ["name a user or a device, not both"]}),
        ),
        (
            format!("user_id={bob}&destination=10.0.0.0%2F8&protocol=icmp"),
            json!({"destination": ["must be an IP address"]}),
        ),
        (format!("user_id={bob}&destination=10.0.0.1&protocol=tcp"), json!({"port": ["can't be blank"]})),
        (
            format!("user_id={bob}&destination=10.0.0.1&protocol=tcp&port=0"),
            json!({"port": ["must be an integer from 1 to 65535"]}),
        ),
        (
            format!("user_id={bob}&destination=10.0.0.1&protocol=gre"),
            json!({"protocol": ["must be one of: tcp, udp, icmp"]}),
        ),
    ];
    for (query, errors) in cases {
        check(&app, &query).await.expect_errors(errors);
    }
}
