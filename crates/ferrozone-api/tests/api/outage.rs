//! docs/api.md section 2: 503 when the database cannot be reached, 500 for a bug, through a
//! store that fails on demand (`testing::flaky`).

use axum::http::{Method, StatusCode};
use serde_json::json;

use crate::helpers::flaky::{call, flaky_app, Failure};
use crate::helpers::key;

#[tokio::test]
async fn an_unreachable_database_is_503_with_retry_after() {
    let (app, failing) = flaky_app().await;
    let device = app.device(&app.admin_id).await;
    let one = format!("/v0/devices/{}", device["id"].as_str().unwrap());
    let create = json!({"device": {"user_id": app.admin_id, "public_key": key()}});
    for failing_call in ["*", "token_by_hash", "device_by_id", "insert_device", "list_users", "ping"] {
        *failing.lock().unwrap() = Some((failing_call, Failure::Unavailable));
        let calls = [
            (Method::GET, "/healthz", None),
            (Method::GET, "/v0/devices", None),
            (Method::GET, &one, None),
            (Method::POST, "/v0/devices", Some(create.clone())),
            (Method::GET, "/v0/users", None),
        ];
        let (mut unavailable, mut created) = (0, Vec::new());
        for (method, path, body) in calls {
            let res = call(&app, method.clone(), path, body).await;
            if res.status == StatusCode::SERVICE_UNAVAILABLE {
                unavailable += 1;
                res.expect(StatusCode::SERVICE_UNAVAILABLE, json!({"error": "service_unavailable"}));
                let retry = res.header("retry-after").and_then(|v| v.parse::<u32>().ok());
                assert!(retry.is_some_and(|s| s > 0), "{method} {path}: Retry-After {retry:?}");
            } else {
                assert!(res.status.is_success(), "{failing_call} {method} {path}: {}", res.status);
                created.extend((res.status == StatusCode::CREATED).then(|| res.id()));
            }
        }
        assert!(unavailable > 0, "{failing_call} failed nothing");
        *failing.lock().unwrap() = None;
        for id in created {
            app.delete(&format!("/v0/devices/{id}"), &app.admin).await.expect_status(StatusCode::NO_CONTENT);
        }
        assert_eq!(
            app.list("/v0/devices").await,
            std::slice::from_ref(&device),
            "{failing_call}: nothing else written"
        );
    }
    let res = app.raw(Method::GET, "/livez", &[], Vec::new()).await;
    res.expect(StatusCode::OK, json!({"status": "ok"}));
}

#[tokio::test]
async fn an_internal_failure_is_500_without_its_cause() {
    let (app, failing) = flaky_app().await;
    *failing.lock().unwrap() = Some(("*", Failure::Internal));
    for (method, path) in [(Method::GET, "/v0/devices"), (Method::GET, "/v0/users/admin@localhost")] {
        let res = call(&app, method, path, None).await;
        res.expect(StatusCode::INTERNAL_SERVER_ERROR, json!({"error": "internal_error"}));
        assert!(!String::from_utf8_lossy(&res.raw).contains("SECRET-DETAIL"));
    }
    *failing.lock().unwrap() = Some(("insert_user", Failure::Internal));
    let res = call(&app, Method::POST, "/v0/users", Some(json!({"user": {"email": "x@example.com"}}))).await;
    res.expect(StatusCode::INTERNAL_SERVER_ERROR, json!({"error": "internal_error"}));
    *failing.lock().unwrap() = None;
    assert_eq!(app.list("/v0/users").await.len(), 1, "nothing written");
}
