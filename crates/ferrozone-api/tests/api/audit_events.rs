//! The audit log through HTTP: a write records who made it (the token or the session), the
//! client's address and the request id, and never a secret.

use std::net::SocketAddr;

use axum::extract::ConnectInfo;
use axum::http::{Method, StatusCode};
use ferrozone_domain::audit::{ActorKind, AuditQuery};
use serde_json::json;

use crate::helpers::{json_request, key, TestApp};

#[tokio::test]
async fn a_device_created_with_a_token_records_the_token_the_client_and_the_request() {
    let app = TestApp::new().await;
    let (user_id, _) = app.user("bob@example.com", "unprivileged").await;
    let body = json!({"device": {"user_id": user_id, "public_key": key(), "name": "laptop"}});
    let mut req = json_request(Method::POST, "/v0/devices", Some(&app.admin), Some(&body));
    req.headers_mut().insert("x-request-id", "audit-request-1".parse().unwrap());
    req.extensions_mut().insert(ConnectInfo(SocketAddr::from(([203, 0, 113, 5], 40_000))));
    let created = app.send(req).await;
    created.expect_status(StatusCode::CREATED);
    let device_id = created.id();
    let preshared_key = created.data()["preshared_key"].as_str().expect("a preshared key").to_owned();

    let query = AuditQuery { action: Some("device.created".into()), limit: 10, ..AuditQuery::default() };
    let records = app.store.audit_records(&query).await.unwrap();
    let [record] = &records[..] else { panic!("one device.created event: {records:?}") };
    let event = record.decode().unwrap().event;
    assert_eq!(event.actor.kind, ActorKind::Token);
    assert!(event.actor.id.is_some(), "the token's id");
    assert_eq!(event.actor.user_id.map(|id| id.to_string()), Some(app.admin_id.clone()));
    assert_eq!(event.origin.client_address.as_deref(), Some("203.0.113.5"));
    assert_eq!(event.origin.request_id.as_deref(), Some("audit-request-1"));
    assert_eq!(event.subject.id, Some(device_id));

    let every = AuditQuery { after_seq: Some(0), limit: 1000, ..AuditQuery::default() };
    let stored: String = app.store.audit_records(&every).await.unwrap().iter().map(|r| r.changes.clone()).collect();
    assert!(stored.contains("laptop"), "the device's name is recorded: {stored}");
    for secret in [preshared_key.as_str(), app.admin.as_str()] {
        assert!(!stored.contains(secret), "a secret in the audit log: {stored}");
    }
}
