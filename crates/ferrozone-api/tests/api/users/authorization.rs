//! Authorization before validation (issue 16): an unprivileged caller gets 403 from every
//! `/v0/users` write whatever its body holds, malformed JSON and wrong content types
//! included; only an admin's body is looked at.

use axum::http::{Method, StatusCode};

use crate::helpers::TestApp;

/// Bodies that are not a valid user request, each in its own way.
const BODIES: &[&str] =
    &["{", "", "[]", "5", "{}", r#"{"user": 5}"#, r#"{"user": null}"#, r#"{"user": {"email": "x", "role": "root"}}"#];

#[tokio::test]
async fn unprivileged_user_writes_are_403_whatever_the_body_holds() {
    let app = TestApp::new().await;
    let (me, token) = app.user("me@example.com", "unprivileged").await;
    let bearer = format!("Bearer {token}");
    let json = [("content-type", "application/json"), ("authorization", bearer.as_str())];
    let text = [("content-type", "text/plain"), ("authorization", bearer.as_str())];
    let mut writes = vec![(Method::POST, "/v0/users".to_owned())];
    for target in [me.as_str(), app.admin_id.as_str(), "admin@localhost", "nobody@example.com"] {
        writes.push((Method::PATCH, format!("/v0/users/{target}")));
        writes.push((Method::PUT, format!("/v0/users/{target}")));
    }
    let before = app.list("/v0/users").await;
    for (method, path) in writes {
        for body in BODIES {
            let res = app.raw(method.clone(), &path, &json, *body).await;
            assert_eq!(res.status, StatusCode::FORBIDDEN, "{method} {path} {body}");
            res.expect_forbidden();
        }
        app.raw(method.clone(), &path, &text, r#"{"user": {}}"#).await.expect_forbidden();
    }
    assert_eq!(app.list("/v0/users").await, before, "nothing changed");
}

#[tokio::test]
async fn an_admins_malformed_user_body_is_still_400_or_415() {
    let app = TestApp::new().await;
    let bearer = format!("Bearer {}", app.admin);
    let json = [("content-type", "application/json"), ("authorization", bearer.as_str())];
    for path in ["/v0/users", "/v0/users/admin@localhost"] {
        let method = if path == "/v0/users" { Method::POST } else { Method::PATCH };
        app.raw(method.clone(), path, &json, "{").await.expect_bad_request();
        app.raw(method.clone(), path, &json, r#"{"user": 5}"#).await.expect_bad_request();
        let text = [("content-type", "text/plain"), ("authorization", bearer.as_str())];
        let res = app.raw(method, path, &text, r#"{"user": {}}"#).await;
        assert_eq!(res.status, StatusCode::UNSUPPORTED_MEDIA_TYPE, "{path}");
    }
}
