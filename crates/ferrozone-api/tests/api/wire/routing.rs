//! Routes: unknown paths, wrong methods, HEAD, and the endpoints without a token.

use std::collections::BTreeMap;

use axum::http::{Method, StatusCode};
use serde_json::{json, Value};

use crate::helpers::{TestApp, JSON_UTF8};

#[tokio::test]
async fn unknown_routes_are_404_with_or_without_a_token() {
    let app = TestApp::new().await;
    let auth = format!("Bearer {}", app.admin);
    for path in [
        "/nope",
        "/v0",
        "/v0/",
        "/v0/nope",
        "/v1/devices",
        "/v0/devices/",
        "/v0/devices/x/y",
        "/v0/users/a/b/c",
        "/V0/devices",
        "/v0/Devices",
        "/v0/openapi.yaml",
    ] {
        for method in [Method::GET, Method::POST, Method::DELETE] {
            for headers in [vec![], vec![("authorization", auth.as_str())]] {
                let res = app.raw(method.clone(), path, &headers, Vec::new()).await;
                assert_eq!(res.status, StatusCode::NOT_FOUND, "{method} {path}");
                res.expect_not_found();
            }
        }
    }
}

#[tokio::test]
async fn wrong_methods_on_known_paths_are_405() {
    let app = TestApp::new().await;
    let device = format!("/v0/devices/{}", app.device(&app.admin_id).await["id"].as_str().unwrap());
    let user = format!("/v0/users/{}", app.admin_id);
    let cases = [
        (Method::POST, device.as_str()),
        (Method::DELETE, "/v0/devices"),
        (Method::PUT, "/v0/devices"),
        (Method::PATCH, "/v0/devices"),
        (Method::POST, user.as_str()),
        (Method::DELETE, "/v0/users"),
        (Method::PUT, "/v0/users"),
        (Method::PATCH, "/v0/users"),
        (Method::POST, "/healthz"),
        (Method::DELETE, "/v0/openapi.json"),
    ];
    for (method, path) in cases {
        let res = app.request(method.clone(), path, Some(&app.admin), Some(json!({"device": {}}))).await;
        assert_eq!(res.status, StatusCode::METHOD_NOT_ALLOWED, "{method} {path}");
        res.expect(StatusCode::METHOD_NOT_ALLOWED, json!({"error": "method_not_allowed"}));
    }
    assert_eq!(app.list("/v0/devices").await.len(), 1, "the device is still there");
}

#[tokio::test]
async fn head_answers_like_get_without_a_body() {
    let app = TestApp::new().await;
    let device = format!("/v0/devices/{}", app.device(&app.admin_id).await["id"].as_str().unwrap());
    let user = format!("/v0/users/{}", app.admin_id);
    for path in [
        "/v0/devices",
        device.as_str(),
        "/v0/users",
        user.as_str(),
        "/v0/users/admin@localhost",
        "/healthz",
        "/v0/openapi.json",
    ] {
        let res = app.request(Method::HEAD, path, Some(&app.admin), None).await;
        assert_eq!(res.status, StatusCode::OK, "HEAD {path}");
        assert!(res.raw.is_empty(), "HEAD {path} has a body");
        assert_eq!(res.header("content-type"), Some(JSON_UTF8), "HEAD {path}");
    }
    let res = app.request(Method::HEAD, "/v0/devices", None, None).await;
    assert_eq!(res.status, StatusCode::UNAUTHORIZED);
    let res =
        app.request(Method::HEAD, "/v0/devices/00000000-0000-0000-0000-000000000000", Some(&app.admin), None).await;
    assert_eq!(res.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn health_and_openapi_need_no_token() {
    let app = TestApp::new().await;
    let data_plane =
        json!({"backend": "none", "last_reconcile_at": null, "last_reconcile_failed": false, "peers_refused": 0});
    let routing = json!({"nftables": "not applied", "reason": "the WireGuard backend is none: nothing is enforced"});
    let healthy =
        json!({"status": "ok", "database": "ok", "data_plane": data_plane, "routing": routing, "warnings": []});
    app.raw(Method::GET, "/healthz", &[], Vec::new()).await.expect(StatusCode::OK, healthy);
    let res = app.raw(Method::GET, "/v0/openapi.json", &[], Vec::new()).await;
    res.expect_status(StatusCode::OK);
    assert!(res.body["openapi"].as_str().is_some_and(|v| v.starts_with("3.1")), "{}", res.body["openapi"]);
    // A bad token does not matter there either.
    let headers = [("authorization", "Bearer nonsense")];
    app.raw(Method::GET, "/healthz", &headers, Vec::new()).await.expect_status(StatusCode::OK);
    app.raw(Method::GET, "/v0/openapi.json", &headers, Vec::new()).await.expect_status(StatusCode::OK);
}

#[tokio::test]
async fn the_openapi_document_lists_every_v0_operation() {
    let app = TestApp::new().await;
    let doc = app.raw(Method::GET, "/v0/openapi.json", &[], Vec::new()).await.body;
    let methods = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];
    let listed: BTreeMap<&str, Vec<&str>> = doc["paths"]
        .as_object()
        .expect("paths")
        .iter()
        .filter(|(path, _)| path.starts_with("/v0/devices") || path.starts_with("/v0/users"))
        .map(|(path, item)| {
            let ops = methods.iter().copied().filter(|m| item.get(*m).is_some()).collect();
            (path.as_str(), ops)
        })
        .collect();
    let expected = BTreeMap::from([
        ("/v0/devices", vec!["get", "post"]),
        ("/v0/devices/{id}", vec!["get", "put", "delete", "patch"]),
        ("/v0/devices/{id}/config", vec!["get"]),
        ("/v0/devices/{id}/pause", vec!["post"]),
        ("/v0/devices/{id}/resume", vec!["post"]),
        ("/v0/users", vec!["get", "post"]),
        ("/v0/users/{id}", vec!["get", "put", "delete", "patch"]),
        ("/v0/users/{id}/disable", vec!["post"]),
        ("/v0/users/{id}/enable", vec!["post"]),
        ("/v0/users/{id}/sessions", vec!["get", "delete"]),
        ("/v0/users/{id}/totp", vec!["get", "delete"]),
    ]);
    assert_eq!(listed, expected);
    assert_eq!(doc["components"]["securitySchemes"]["bearer"]["scheme"], "bearer");
    for (path, ops) in &expected {
        for op in ops {
            let responses = &doc["paths"][path][op]["responses"];
            assert!(responses.get("401").is_some(), "{op} {path} documents no 401");
            // A POST creates, but for disabling and enabling a user, pausing and resuming a
            // device (the user or device as it is now).
            let success = match *op {
                "post" if ["/disable", "/enable", "/pause", "/resume"].iter().any(|end| path.ends_with(end)) => "200",
                "post" => "201",
                "delete" => "204",
                _ => "200",
            };
            assert!(responses.get(success).is_some(), "{op} {path} documents no {success}");
        }
    }
    let show = &doc["paths"]["/v0/devices/{id}"]["get"]["responses"]["200"]["content"]["application/json"]["schema"];
    let device = resolve(&doc, &resolve(&doc, show)["properties"]["data"]);
    // The 25 fields of every response, `private_key` in a create's 201 alone and
    // `paused_at` while paused alone.
    assert_eq!(device["properties"].as_object().map(serde_json::Map::len), Some(27), "{device}");
    let required = device["required"].as_array().expect("required fields");
    assert!(!required.contains(&Value::from("private_key")), "{device}");
    assert!(!required.contains(&Value::from("paused_at")), "{device}");
}

/// Follows a `$ref` within the document.
fn resolve(doc: &Value, schema: &Value) -> Value {
    match schema["$ref"].as_str() {
        Some(pointer) => doc.pointer(pointer.trim_start_matches('#')).cloned().unwrap_or(Value::Null),
        None => schema.clone(),
    }
}
