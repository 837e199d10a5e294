//! Headers every answer carries: a usable request id, and under `/v0` no caching and no
//! content sniffing.

use axum::http::{Method, StatusCode};
use serde_json::json;

use crate::helpers::{send_any, TestApp};

#[tokio::test]
async fn an_unusable_client_request_id_is_replaced_by_a_fresh_one() {
    let app = TestApp::new().await;
    let long = "a".repeat(129);
    let huge = "b".repeat(60_000);
    for bad in [long.as_str(), huge.as_str(), "has space", "quote\"d", "slash/ed", "semi;colon", ""] {
        let res = app.raw(Method::GET, "/healthz", &[("x-request-id", bad)], Vec::new()).await;
        let id = res.header("x-request-id").expect("an id");
        assert!(!id.is_empty() && id != bad && id.len() <= 128, "{bad:.40} was kept as {id:.40}");
    }
    let longest = "A-z_0.9".repeat(18) + "xx";
    assert_eq!(longest.len(), 128);
    let res = app.raw(Method::GET, "/healthz", &[("x-request-id", &longest)], Vec::new()).await;
    assert_eq!(res.header("x-request-id"), Some(longest.as_str()), "128 plain characters are kept");
}

#[tokio::test]
async fn two_client_request_ids_are_replaced_by_one_fresh_id() {
    let app = TestApp::new().await;
    let req = axum::http::Request::builder()
        .uri("/healthz")
        .header("x-request-id", "first")
        .header("x-request-id", "second")
        .body(axum::body::Body::empty())
        .unwrap();
    let res = app.send(req).await;
    let ids: Vec<_> = res.headers.get_all("x-request-id").iter().collect();
    assert_eq!(ids.len(), 1, "{ids:?}");
    assert!(ids[0] != "first" && ids[0] != "second", "{ids:?}");
}

#[tokio::test]
async fn every_v0_answer_is_not_stored_nor_sniffed_and_other_pages_are_untouched() {
    let app = TestApp::new().await;
    let answers = [
        app.get("/v0/users", &app.admin).await,
        app.get("/v0/devices", "wrong-token").await,
        app.raw(Method::GET, "/v0/nope", &[], Vec::new()).await,
        app.raw(Method::GET, "/v0", &[], Vec::new()).await,
        app.raw(Method::DELETE, "/v0/users", &[("authorization", &format!("Bearer {}", app.admin))], Vec::new()).await,
        app.post("/v0/users", &app.admin, json!({"user": {"email": "not an email"}})).await,
    ];
    let statuses: Vec<_> = answers.iter().map(|r| r.status).collect();
    assert_eq!(statuses[0], StatusCode::OK);
    assert!(statuses[1..].iter().all(|s| s.is_client_error()), "{statuses:?}");
    for res in &answers {
        assert_eq!(res.header("cache-control"), Some("no-store"), "{}", res.status);
        assert_eq!(res.header("x-content-type-options"), Some("nosniff"), "{}", res.status);
    }
    let outside = send_any(app.router.clone(), get("/v0x")).await;
    assert_eq!(outside.status, StatusCode::NOT_FOUND);
    let livez = send_any(app.router.clone(), get("/livez")).await;
    assert_eq!(livez.header("x-content-type-options"), None, "only /v0 answers get the API headers");
}

fn get(path: &str) -> axum::http::Request<axum::body::Body> {
    axum::http::Request::builder().uri(path).body(axum::body::Body::empty()).unwrap()
}
