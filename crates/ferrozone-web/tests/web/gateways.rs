//! Issue 36: the console's Gateways page (docs/web.md, "Console: gateways"): a gateway added
//! through the form shows its enrolment token once, the gateway enrols with it, the list says
//! so, and Revoke stops its credential; the API's messages stand at the field.

use axum::http::{Method, StatusCode};
use serde_json::json;

use crate::helpers::TestApp;
use crate::signin::{attribute_after, password_user, text, Browser, PASSWORD};

const ADMIN: &str = "boss@example.com";

#[tokio::test]
async fn a_gateway_added_in_the_console_enrols_and_is_revoked() {
    let app = TestApp::new().await;
    password_user(&app, ADMIN, "admin").await;
    let mut admin = Browser::new(&app);
    admin.sign_in(ADMIN, PASSWORD, "/").await.expect_status(StatusCode::SEE_OTHER);
    let page = text(admin.get("/admin/gateways").await.expect_status(StatusCode::OK));
    assert!(page.contains("No gateways on other hosts yet."), "{page}");

    let csrf = admin.csrf_token().await;
    let refused = admin.post_form("/admin/gateways", &[("csrf_token", &csrf), ("name", " ")]).await;
    let refused = text(refused.expect_status(StatusCode::UNPROCESSABLE_ENTITY));
    assert!(refused.contains("id=\"gateway-name-error\">Name can&#39;t be blank"), "{refused}");

    let created = admin.post_form("/admin/gateways", &[("csrf_token", &csrf), ("name", "office")]).await;
    let created = text(created.expect_status(StatusCode::CREATED));
    let token = attribute_after(&created, "id=\"gateway-token\" value=\"");
    assert!(token.starts_with("fzge_"), "{created}");
    let list = text(admin.get("/admin/gateways").await.expect_status(StatusCode::OK));
    assert!(list.contains("Awaiting enrolment") && !list.contains(&token), "the token is shown once: {list}");

    let enrolled = app.request(Method::POST, "/gateway/v1/enrol", None, Some(json!({"enrolment_token": token}))).await;
    let credential = enrolled.expect_status(StatusCode::CREATED).data()["credential"].as_str().unwrap().to_owned();
    let list = text(admin.get("/admin/gateways").await.expect_status(StatusCode::OK));
    assert!(list.contains("badge ok\">Enrolled"), "{list}");

    // Its process polls, saying how its data plane is: the page shows it, and names the
    // limit and the way out when peers are refused.
    let auth = format!("Bearer {credential}");
    let session = uuid::Uuid::new_v4().to_string();
    let headers = [("authorization", auth.as_str()), ("ferrozone-gateway-session", session.as_str())];
    let domain = app.domain.clone();
    let publisher = tokio::spawn(async move { domain.publish_gateway_states(domain.data_plane_changes()).await });
    let path = "/gateway/v1/state?wait=25&backend=userspace&applied=65536&refused=12&failing=false";
    let polled = app.raw(Method::GET, path, &headers, axum::body::Body::empty()).await;
    assert_eq!(polled.status, StatusCode::OK, "{:?}", polled.body);
    publisher.abort();
    let list = text(admin.get("/admin/gateways").await.expect_status(StatusCode::OK));
    assert!(list.contains("badge ok\">Connected") && list.contains("65536 peers (userspace)"), "{list}");
    assert!(list.contains("12 devices are not on its interface: wireguard-go holds at most 65,536 peers"), "{list}");

    let id = attribute_after(&list, "<form method=\"post\" action=\"/admin/gateways/").replace("/revoke", "");
    let revoked = admin.post_form(&format!("/admin/gateways/{id}/revoke"), &[("csrf_token", &csrf)]).await;
    assert_eq!(revoked.expect_status(StatusCode::SEE_OTHER).header("location"), Some("/admin/gateways?revoked=1"));
    let list = text(admin.get("/admin/gateways?revoked=1").await.expect_status(StatusCode::OK));
    assert!(list.contains("its credential no longer works") && list.contains("badge bad\">Revoked"), "{list}");
    assert!(app.domain.authenticate_gateway(&credential).await.unwrap().is_none());

    password_user(&app, "pat@example.com", "unprivileged").await;
    let mut pat = Browser::on(app.router.clone(), "192.0.2.50:1");
    pat.sign_in("pat@example.com", PASSWORD, "/").await.expect_status(StatusCode::SEE_OTHER);
    pat.get("/admin/gateways").await.expect_status(StatusCode::FORBIDDEN);
}
