//! Two instances sharing one database (docs/api.md sections 1 and 5): they agree on the
//! server key and the records, and the guarantees hold across them.

use std::collections::{BTreeMap, HashSet};

use axum::http::{Method, StatusCode};
use serde_json::json;

use super::id_of;
use crate::helpers::{concurrently_via, json_request, key, send, TestApp};

const LIMIT: &str = "Maximum device limit reached. Remove an existing device before creating a new one.";

#[tokio::test]
async fn instances_sharing_a_database_agree() {
    let app = TestApp::new().await;
    let (second, domain) = app.second_instance().await;
    assert_eq!(domain.server_public_key(), app.domain.server_public_key());
    let device = app.device(&app.admin_id).await;
    let path = format!("/v0/devices/{}", id_of(&device));
    let res = send(second.clone(), json_request(Method::GET, &path, Some(&app.admin), None)).await;
    res.expect(StatusCode::OK, json!({"data": device}));
    let rename = json!({"device": {"name": "renamed"}});
    let res = send(second, json_request(Method::PATCH, &path, Some(&app.admin), Some(&rename))).await;
    res.expect_status(StatusCode::OK);
    assert_eq!(app.show_device(&id_of(&device)).await, res.data().clone());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 8)]
async fn the_limit_and_unique_addresses_hold_across_instances() {
    let app = TestApp::with_settings(|s| s.max_devices_per_user = 20).await;
    let (second, _) = app.second_instance().await;
    let requests = (0..30)
        .map(|i| {
            let router = if i % 2 == 0 { app.router.clone() } else { second.clone() };
            let body = json!({"device": {"user_id": app.admin_id, "public_key": key()}});
            (router, json_request(Method::POST, "/v0/devices", Some(&app.admin), Some(&body)))
        })
        .collect();
    let responses = concurrently_via(requests).await;
    let mut statuses = BTreeMap::new();
    for res in &responses {
        *statuses.entry(res.status.as_u16()).or_insert(0) += 1;
        if res.status != StatusCode::CREATED {
            res.expect_errors(json!({"base": [LIMIT]}));
        }
    }
    assert_eq!(statuses, BTreeMap::from([(201, 20), (422, 10)]));
    let created: Vec<_> = responses.iter().filter(|r| r.status == StatusCode::CREATED).collect();
    for family in ["ipv4", "ipv6"] {
        let distinct: HashSet<&str> = created.iter().map(|r| r.data()[family].as_str().unwrap()).collect();
        assert_eq!(distinct.len(), 20, "{family}");
    }
}
