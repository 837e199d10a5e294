//! `/v0/webhooks`: admins register endpoints; the secret is shown once and never again;
//! bad input is a 422; each edit is an audit event naming the secret without its value.

use axum::http::StatusCode;
use ferrozone_domain::audit::AuditQuery;
use serde_json::{json, Value};

use crate::helpers::{TestApp, TestResponse};

async fn create(app: &TestApp, attrs: Value) -> TestResponse {
    app.post("/v0/webhooks", &app.admin, json!({ "webhook": attrs })).await
}

#[tokio::test]
async fn an_endpoint_is_created_shown_updated_and_deleted_its_secret_shown_once() {
    let app = TestApp::new().await;
    let res = create(&app, json!({"url": "https://hooks.example.com/f", "events": ["device.", "user.deleted"]})).await;
    let data = res.expect_status(StatusCode::CREATED).data().clone();
    let secret = data["secret"].as_str().expect("the generated secret").to_owned();
    assert!(secret.starts_with("whsec_") && secret.len() == 49, "{secret}");
    assert_eq!((&data["enabled"], &data["last_attempt"]), (&json!(true), &Value::Null));
    let location = res.header("location").expect("a location").to_owned();

    // Once the log is read (on PostgreSQL: sealed), its own `webhook.created` is pending:
    // the first event after its cursor (docs/api.md, "Webhooks").
    app.get("/v0/audit_events?action=webhook.created", &app.admin).await.expect_status(StatusCode::OK);
    let shown = app.get(&location, &app.admin).await.expect_status(StatusCode::OK).data().clone();
    assert_eq!(shown["pending"], json!(1), "{shown}");
    assert!(shown.get("secret").is_none(), "never shown again: {shown}");
    assert_eq!(shown["events"], json!(["device.", "user.deleted"]));
    assert_eq!(app.list("/v0/webhooks").await.len(), 1);
    assert!(!app.get("/v0/webhooks", &app.admin).await.raw.windows(secret.len()).any(|w| w == secret.as_bytes()));

    let updated = app.patch(&location, &app.admin, json!({"webhook": {"enabled": false, "rotate_secret": true}})).await;
    let updated = updated.expect_status(StatusCode::OK).data().clone();
    let rotated = updated["secret"].as_str().expect("the rotated secret");
    assert!(rotated != secret && updated["enabled"] == json!(false) && updated["url"] == data["url"]);
    let given = app.patch(&location, &app.admin, json!({"webhook": {"secret": "my own secret, long enough"}})).await;
    assert!(given.expect_status(StatusCode::OK).data().get("secret").is_none(), "a given secret is not echoed");
    app.get(&format!("{location}/attempts"), &app.admin).await.expect(StatusCode::OK, json!({"data": []}));

    let deleted = app.delete(&location, &app.admin).await;
    assert_eq!(deleted.status, StatusCode::NO_CONTENT);
    app.get(&location, &app.admin).await.expect_not_found();
    app.get(&format!("{location}/attempts"), &app.admin).await.expect_not_found();
    app.get("/v0/webhooks/not-a-uuid", &app.admin).await.expect_not_found();

    let query = AuditQuery { after_seq: Some(0), action: Some("webhook.".into()), limit: 100, ..AuditQuery::default() };
    let records = app.store.audit_records(&query).await.expect("the audit log");
    let actions: Vec<&str> = records.iter().map(|r| r.action.as_str()).collect();
    assert_eq!(actions, ["webhook.created", "webhook.updated", "webhook.updated", "webhook.deleted"]);
    for record in &records {
        assert!(!record.changes.contains(&secret) && !record.changes.contains(rotated), "{}", record.changes);
    }
    assert!(records[0].changes.contains(r#"{"field":"secret","secret":true}"#), "{}", records[0].changes);
}

#[tokio::test]
async fn bad_input_is_a_422_and_others_are_forbidden() {
    let app = TestApp::new().await;
    create(&app, json!({})).await.expect_errors(json!({"url": ["can't be blank"]}));
    create(&app, json!({"url": "ftp://example.com/"}))
        .await
        .expect_errors(json!({"url": ["must be an http or https URL"]}));
    let private = create(&app, json!({"url": "http://127.0.0.1:9000/hook"})).await;
    private.expect_status(StatusCode::UNPROCESSABLE_ENTITY);
    create(&app, json!({"url": "https://example.com/", "events": ["nothing.created"], "secret": "short"}))
        .await
        .expect_status(StatusCode::UNPROCESSABLE_ENTITY);
    create(&app, json!({"url": 7, "enabled": "yes"}))
        .await
        .expect_errors(json!({"url": ["is invalid"], "enabled": ["is invalid"]}));
    let (_, token) = app.user("bob@example.com", "unprivileged").await;
    app.get("/v0/webhooks", &token).await.expect_forbidden();
    app.post("/v0/webhooks", &token, json!({"webhook": {"url": "https://example.com/"}})).await.expect_forbidden();
    assert!(app.list("/v0/webhooks").await.is_empty());
}

#[tokio::test]
async fn a_local_use_nat64_address_is_refused_like_a_private_one() {
    let app = TestApp::new().await;
    // 64:ff9b:1::/48 (RFC 8215) is translated by the site's own NAT64, into any address,
    // its own network's too: refused as the private addresses are.
    for url in ["http://[64:ff9b:1::5db8:d822]/hook", "https://[64:ff9b:1:ffff::a00:1]:8443/"] {
        create(&app, json!({ "url": url })).await.expect_errors(json!({"url": [
            "is a loopback, link-local or private address (see FERROZONE_WEBHOOK_ALLOW_PRIVATE)"
        ]}));
    }
    assert!(app.list("/v0/webhooks").await.is_empty());
}

#[tokio::test]
async fn a_url_is_audited_by_its_origin_and_fingerprint_never_its_token() {
    let app = TestApp::new().await;
    let url = "https://hooks.example.com/services/T0KEN-IN-PATH?sig=T0KEN-IN-QUERY";
    let res = create(&app, json!({ "url": url })).await;
    res.expect_status(StatusCode::CREATED);
    let location = res.header("location").expect("a location").to_owned();
    // Only the query changes: still recorded as a change of the URL.
    let moved = "https://hooks.example.com/services/T0KEN-IN-PATH?sig=OTHER-T0KEN";
    app.patch(&location, &app.admin, json!({"webhook": {"url": moved}})).await.expect_status(StatusCode::OK);
    assert_eq!(app.delete(&location, &app.admin).await.status, StatusCode::NO_CONTENT);

    let listed = app.get("/v0/audit_events?action=webhook.", &app.admin).await;
    listed.expect_status(StatusCode::OK);
    let text = String::from_utf8_lossy(&listed.raw).into_owned();
    for token in ["T0KEN-IN-PATH", "T0KEN-IN-QUERY", "OTHER-T0KEN", "/services"] {
        assert!(!text.contains(token), "{token} in GET /v0/audit_events: {text}");
    }
    let query = AuditQuery { after_seq: Some(0), action: Some("webhook.".into()), limit: 10, ..AuditQuery::default() };
    let records = app.store.audit_records(&query).await.expect("the audit log");
    assert_eq!(records.len(), 3);
    for record in &records {
        assert!(!record.changes.contains("T0KEN"), "stored: {}", record.changes);
    }
    let url_change = |index: usize| -> Value {
        let changes: Value = serde_json::from_str(&records[index].changes).expect("JSON changes");
        changes.as_array().and_then(|c| c.iter().find(|c| c["field"] == "url")).cloned().expect("a url change")
    };
    let created = url_change(0);
    assert_eq!(created["after"]["origin"], "https://hooks.example.com:443", "{created}");
    assert_eq!(created["after"]["fingerprint"].as_str().map(str::len), Some(32), "{created}");
    let updated = url_change(1);
    assert_eq!(updated["before"], created["after"], "{updated}");
    assert_eq!(updated["after"]["origin"], updated["before"]["origin"]);
    assert_ne!(updated["after"]["fingerprint"], updated["before"]["fingerprint"], "named as changed");
    assert_eq!(url_change(2)["before"], updated["after"]);
}
