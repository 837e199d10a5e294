//! Device lists: order, the `user_id` filter and paging.

use std::collections::HashSet;

use axum::http::StatusCode;
use ferrozone_domain::ipam::Pool;
use ferrozone_domain::store::STREAM_BATCH;
use serde_json::json;

use super::id_of;
use crate::helpers::TestApp;

/// Creates `n` devices alternating between the admin and a second user; returns all ids
/// in creation order and the second user's id.
async fn seed(app: &TestApp, n: usize) -> (Vec<String>, String) {
    let (other, _) = app.user("other@example.com", "unprivileged").await;
    let mut ids = Vec::new();
    for i in 0..n {
        let owner = if i % 2 == 0 { &app.admin_id } else { &other };
        ids.push(id_of(&app.device(owner).await));
    }
    (ids, other)
}

#[tokio::test]
async fn lists_are_ordered_by_creation_and_filtered_by_user() {
    let app = TestApp::with_settings(|s| s.max_devices_per_user = 20).await;
    let (ids, other) = seed(&app, 9).await;
    assert_eq!(app.list_ids("/v0/devices").await, ids);
    let odd: Vec<String> = ids.iter().skip(1).step_by(2).cloned().collect();
    let even: Vec<String> = ids.iter().step_by(2).cloned().collect();
    assert_eq!(app.list_ids(&format!("/v0/devices?user_id={other}")).await, odd);
    assert_eq!(app.list_ids(&format!("/v0/devices?user_id={}", app.admin_id)).await, even);
    assert!(app.list_ids("/v0/devices?user_id=6f1c2b9e-3d4a-4c5b-9e8f-0a1b2c3d4e5f").await.is_empty());
    assert_eq!(app.list_ids("/v0/devices?unknown=1&sort=desc").await, ids, "unknown parameters are ignored");
}

#[tokio::test]
async fn a_list_longer_than_a_store_batch_is_one_document_in_order() {
    let pool = Pool::new("10.8.0.0/20".parse().unwrap(), "10.8.0.1".parse().unwrap()).unwrap();
    let app = TestApp::with_settings(move |s| {
        s.max_devices_per_user = 1000;
        (s.pools.v4, s.pools.v6) = (Some(pool), None);
    })
    .await;
    let (ids, other) = seed(&app, 2 * STREAM_BATCH + 1).await;
    let res = app.get("/v0/devices", &app.admin).await;
    res.expect_status(StatusCode::OK);
    assert_eq!(res.header("content-type"), Some("application/json; charset=utf-8"));
    let listed: Vec<&str> = res.data().as_array().unwrap().iter().map(|d| d["id"].as_str().unwrap()).collect();
    assert_eq!(listed, ids);
    let odd: Vec<String> = ids.iter().skip(1).step_by(2).cloned().collect();
    assert_eq!(app.list_ids(&format!("/v0/devices?user_id={other}")).await, odd);
}

/// Walks every page of `path` (which has no query yet, or ends in one) with `limit`.
async fn walk_pages(app: &TestApp, path: &str, limit: usize) -> (Vec<String>, usize) {
    let sep = if path.contains('?') { '&' } else { '?' };
    let (mut seen, mut pages, mut cursor) = (Vec::new(), 0, None::<String>);
    loop {
        let url = match &cursor {
            Some(c) => format!("{path}{sep}limit={limit}&page_cursor={c}"),
            None => format!("{path}{sep}limit={limit}"),
        };
        let res = app.get(&url, &app.admin).await;
        res.expect_status(StatusCode::OK);
        let page = res.data().as_array().unwrap();
        assert!(page.len() <= limit, "{url}");
        assert_eq!(res.body["metadata"]["limit"], limit, "{url}");
        seen.extend(page.iter().map(id_of));
        pages += 1;
        assert!(pages <= 100, "paging does not end");
        match res.body["metadata"]["next_page_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => {
                assert!(res.body["metadata"].get("next_page_cursor").is_some(), "null, not absent");
                return (seen, pages);
            }
        }
    }
}

#[tokio::test]
async fn paging_walks_every_device_exactly_once() {
    let app = TestApp::with_settings(|s| s.max_devices_per_user = 20).await;
    let (ids, other) = seed(&app, 9).await;
    for limit in [1, 2, 3, 4, 9, 10, 1000] {
        let (seen, pages) = walk_pages(&app, "/v0/devices", limit).await;
        assert_eq!(seen, ids, "limit {limit}");
        assert_eq!(seen.iter().collect::<HashSet<_>>().len(), ids.len());
        assert!(pages >= ids.len().div_ceil(limit) && pages <= ids.len() / limit + 1, "limit {limit}: {pages} pages");
    }
    let odd: Vec<String> = ids.iter().skip(1).step_by(2).cloned().collect();
    let (seen, _) = walk_pages(&app, &format!("/v0/devices?user_id={other}"), 2).await;
    assert_eq!(seen, odd);
}

#[tokio::test]
async fn paging_is_stable_when_devices_are_deleted_between_pages() {
    let app = TestApp::with_settings(|s| s.max_devices_per_user = 20).await;
    let (ids, _) = seed(&app, 6).await;
    let first = app.get("/v0/devices?limit=2", &app.admin).await;
    let cursor = first.body["metadata"]["next_page_cursor"].as_str().unwrap().to_owned();
    // Delete the last device of the page the cursor points after, and one on the next page.
    for gone in [&ids[1], &ids[2]] {
        app.delete(&format!("/v0/devices/{gone}"), &app.admin).await.expect_status(StatusCode::NO_CONTENT);
    }
    let next = app.get(&format!("/v0/devices?limit=2&page_cursor={cursor}"), &app.admin).await;
    let page: Vec<String> = next.data().as_array().unwrap().iter().map(id_of).collect();
    assert_eq!(page, [ids[3].clone(), ids[4].clone()]);
}

#[tokio::test]
async fn bad_list_parameters_are_400() {
    let app = TestApp::new().await;
    app.device(&app.admin_id).await;
    let bad = [
        "limit=0",
        "limit=1001",
        "limit=-1",
        "limit=abc",
        "limit=",
        "limit=1.5",
        "limit=99999999999999999999",
        "page_cursor=zzz",
        "page_cursor=!!!",
        "page_cursor=",
        "page_cursor=bm90LWEtY3Vyc29y",
        "limit=2&page_cursor=%00",
        "user_id=abc",
        "user_id=",
        "user_id=6f1c2b9e",
    ];
    for query in bad {
        let res = app.get(&format!("/v0/devices?{query}"), &app.admin).await;
        assert_eq!(res.status, StatusCode::BAD_REQUEST, "{query}: {}", res.body);
        res.expect_bad_request();
    }
    let res = app.get("/v0/devices?limit=1000", &app.admin).await;
    assert_eq!(res.expect_status(StatusCode::OK).body["metadata"], json!({"limit": 1000, "next_page_cursor": null}));
}
