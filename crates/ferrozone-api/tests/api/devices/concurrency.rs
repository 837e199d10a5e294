//! Concurrent creates: addresses, the device limit and uniqueness hold under races.

use std::collections::{BTreeMap, HashSet};

use axum::http::{Method, StatusCode};
use serde_json::{json, Value};

use crate::helpers::{concurrently, json_request, key, merge, TestApp, TestResponse};

const LIMIT: &str = "Maximum device limit reached. Remove an existing device before creating a new one.";

/// Sends all `bodies` as concurrent `POST /v0/devices` with the admin token.
async fn concurrent_creates(app: &TestApp, bodies: Vec<Value>) -> Vec<TestResponse> {
    let post =
        |attrs: Value| json_request(Method::POST, "/v0/devices", Some(&app.admin), Some(&json!({ "device": attrs })));
    concurrently(app, bodies.into_iter().map(post).collect()).await
}

/// How many responses had each status, and each distinct error body.
fn tally(responses: &[TestResponse]) -> (BTreeMap<u16, usize>, HashSet<String>) {
    let mut statuses = BTreeMap::new();
    let mut errors = HashSet::new();
    for res in responses {
        *statuses.entry(res.status.as_u16()).or_default() += 1;
        if res.status != StatusCode::CREATED {
            errors.insert(res.body.to_string());
        }
    }
    (statuses, errors)
}

fn fresh(app: &TestApp, n: usize) -> Vec<Value> {
    (0..n).map(|_| json!({"user_id": app.admin_id, "public_key": key()})).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 8)]
async fn fifty_concurrent_creates_get_distinct_addresses() {
    let app = TestApp::with_settings(|s| s.max_devices_per_user = 50).await;
    let responses = concurrent_creates(&app, fresh(&app, 50)).await;
    assert_eq!(tally(&responses).0, BTreeMap::from([(201, 50)]), "{:?}", tally(&responses).1);
    for family in ["ipv4", "ipv6"] {
        let addresses: HashSet<&str> = responses.iter().map(|r| r.data()[family].as_str().unwrap()).collect();
        assert_eq!(addresses.len(), 50, "{family}");
    }
    responses.iter().for_each(|r| super::assert_assigned(r.data()));
    assert_eq!(app.list("/v0/devices").await.len(), 50);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 8)]
async fn the_device_limit_holds_under_concurrent_creates() {
    let app = TestApp::with_settings(|s| s.max_devices_per_user = 50).await;
    let responses = concurrent_creates(&app, fresh(&app, 60)).await;
    let (statuses, errors) = tally(&responses);
    assert_eq!(statuses, BTreeMap::from([(201, 50), (422, 10)]), "{errors:?}");
    assert_eq!(errors, HashSet::from([json!({"errors": {"base": [LIMIT]}}).to_string()]));
    assert_eq!(app.list("/v0/devices").await.len(), 50);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 8)]
async fn an_exhausted_pool_under_concurrent_creates_assigns_each_address_once() {
    let pool = ferrozone_domain::ipam::Pool::new("10.0.0.0/29".parse().unwrap(), "10.0.0.1".parse().unwrap()).unwrap();
    let app = TestApp::with_settings(|s| {
        s.pools.v4 = Some(pool);
        s.max_devices_per_user = 50;
    })
    .await;
    let responses = concurrent_creates(&app, fresh(&app, 12)).await;
    let (statuses, errors) = tally(&responses);
    assert_eq!(statuses, BTreeMap::from([(201, 5), (422, 7)]), "{errors:?}");
    assert_eq!(errors, HashSet::from([json!({"errors": {"base": ["CIDR 10.0.0.0/29 is exhausted"]}}).to_string()]));
    let created: HashSet<&str> = responses
        .iter()
        .filter(|r| r.status == StatusCode::CREATED)
        .map(|r| r.data()["ipv4"].as_str().unwrap())
        .collect();
    assert_eq!(created, HashSet::from(["10.0.0.2", "10.0.0.3", "10.0.0.4", "10.0.0.5", "10.0.0.6"]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 8)]
async fn racing_for_one_unique_value_lets_exactly_one_win() {
    let app = TestApp::with_settings(|s| s.max_devices_per_user = 50).await;
    let cases = [
        ("public_key", json!({"public_key": key()})),
        ("name", json!({"name": "contested"})),
        ("ipv4", json!({"ipv4": "10.3.2.99"})),
        ("ipv6", json!({"ipv6": "fd00::3:2:99"})),
    ];
    for (field, attrs) in cases {
        let bodies =
            (0..10).map(|_| merge(json!({"user_id": app.admin_id, "public_key": key()}), attrs.clone())).collect();
        let (statuses, errors) = tally(&concurrent_creates(&app, bodies).await);
        assert_eq!(statuses, BTreeMap::from([(201, 1), (422, 9)]), "{field}: {errors:?}");
        assert_eq!(
            errors,
            HashSet::from([json!({"errors": { field: ["has already been taken"] }}).to_string()]),
            "{field}"
        );
    }
    assert_eq!(app.list("/v0/devices").await.len(), 4);
}
