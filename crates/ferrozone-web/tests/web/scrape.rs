//! `/metrics` and what it counts: requests by route template, sign-ins, refused tokens.
//! Each test records into a recorder of its own (set for the test's thread, which runs
//! the requests), so the tests see only their own measures.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{header, Method, Request, StatusCode};
use axum::Router;
use ferrozone_http::{AppState, MetricsExport};
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusRecorder};
use tower::ServiceExt;
use zeroize::Zeroizing;

use crate::helpers::{send, TestApp};
use crate::signin::{password_user, Browser, PASSWORD};

const TOKEN: &str = "a-scraper-token-0123456789";

/// The app with metrics exported through `recorder`, `/metrics` taking [`TOKEN`].
fn metered(app: &TestApp, recorder: &PrometheusRecorder) -> Router {
    let handle = recorder.handle();
    let export = MetricsExport {
        render: Arc::new(move || handle.render()),
        token: Some(Arc::new(Zeroizing::new(TOKEN.to_owned()))),
    };
    crate::helpers::app(AppState::new(app.domain.clone(), false).with_metrics(export))
}

fn recorder() -> PrometheusRecorder {
    PrometheusBuilder::new().set_buckets(&[0.001, 0.1, 1.0]).unwrap().build_recorder()
}

fn get(path: &str, token: Option<&str>) -> Request<Body> {
    let mut req = Request::builder().uri(path);
    if let Some(token) = token {
        req = req.header(header::AUTHORIZATION, format!("Bearer {token}"));
    }
    req.body(Body::empty()).unwrap()
}

/// The scraped text, through `/metrics` with the token.
async fn scrape(router: &Router) -> String {
    let res = router.clone().oneshot(get("/metrics", Some(TOKEN))).await.unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    let content_type = res.headers().get(header::CONTENT_TYPE).unwrap().to_str().unwrap().to_owned();
    assert_eq!(content_type, "text/plain; version=0.0.4; charset=utf-8");
    let body = http_body_util::BodyExt::collect(res.into_body()).await.unwrap().to_bytes();
    String::from_utf8(body.to_vec()).unwrap()
}

/// The value of the sample `series` (name and labels as rendered) in `text`.
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines().find_map(|line| line.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

#[tokio::test]
async fn requests_are_counted_by_route_template_and_a_path_no_route_matches_is_unmatched() {
    let app = TestApp::new().await;
    let recorder = recorder();
    let _local = metrics::set_default_local_recorder(&recorder);
    let router = metered(&app, &recorder);
    let id = "3a7c0d2e-0000-4000-8000-000000000001";
    send(router.clone(), get(&format!("/v0/devices/{id}"), Some(&app.admin))).await.expect_not_found();
    for _ in 0..2 {
        send(router.clone(), get("/v0/users", Some(&app.admin))).await.expect_status(StatusCode::OK);
    }
    send(router.clone(), get("/no/such/alice@example.com", None)).await.expect_not_found();
    let purge = Request::builder().method(Method::from_bytes(b"PURGE").unwrap()).uri("/v0/users");
    send(router.clone(), purge.body(Body::empty()).unwrap()).await.expect_status(StatusCode::METHOD_NOT_ALLOWED);

    let text = scrape(&router).await;
    let requests = |labels: &str| sample(&text, &format!("ferrozone_http_requests_total{{{labels}}}"));
    assert_eq!(requests(r#"route="/v0/devices/{id}",method="GET",status="404""#), Some(1.0), "{text}");
    assert_eq!(requests(r#"route="/v0/users",method="GET",status="200""#), Some(2.0), "{text}");
    assert_eq!(requests(r#"route="unmatched",method="GET",status="404""#), Some(1.0), "{text}");
    assert_eq!(requests(r#"route="/v0/users",method="other",status="405""#), Some(1.0), "{text}");
    let count = r#"ferrozone_http_request_duration_seconds_count{route="/v0/devices/{id}",method="GET"}"#;
    assert_eq!(sample(&text, count), Some(1.0), "{text}");
    let count = r#"ferrozone_http_request_duration_seconds_count{route="/v0/users",method="GET"}"#;
    assert_eq!(sample(&text, count), Some(2.0), "{text}");
    for private in [id, "alice", "/no/such"] {
        assert!(!text.contains(private), "{private} in a label:\n{text}");
    }
}

#[tokio::test]
async fn metrics_need_the_metrics_token_and_an_api_token_is_not_one() {
    let app = TestApp::new().await;
    let recorder = recorder();
    let router = metered(&app, &recorder);
    send(router.clone(), get("/metrics", None)).await.expect_auth_error("unauthenticated");
    send(router.clone(), get("/metrics", Some("a-scraper-token-012345678"))).await.expect_auth_error("invalid_token");
    send(router.clone(), get("/metrics", Some(&app.admin))).await.expect_auth_error("invalid_token");
    // And the metrics token opens nothing else.
    send(router.clone(), get("/v0/users", Some(TOKEN))).await.expect_auth_error("invalid_token");
}

#[tokio::test]
async fn without_metrics_there_is_no_metrics_route() {
    let app = TestApp::new().await;
    for token in [None, Some(TOKEN), Some(app.admin.as_str())] {
        let res = send(app.router.clone(), get("/metrics", token)).await;
        res.expect_not_found();
    }
}

#[tokio::test]
async fn the_metrics_listener_serves_metrics_alone_without_a_token() {
    let recorder = recorder();
    let handle = recorder.handle();
    metrics::with_local_recorder(&recorder, || metrics::counter!("ferrozone_example_total").increment(3));
    let router = ferrozone_http::metrics_app(Arc::new(move || handle.render()));
    let res = router.clone().oneshot(get("/metrics", None)).await.unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    let body = http_body_util::BodyExt::collect(res.into_body()).await.unwrap().to_bytes();
    assert_eq!(sample(&String::from_utf8_lossy(&body), "ferrozone_example_total"), Some(3.0));
    for path in ["/v0/users", "/", "/metrics/x"] {
        let res = router.clone().oneshot(get(path, None)).await.unwrap();
        assert_eq!(res.status(), StatusCode::NOT_FOUND, "{path}");
    }
}

#[tokio::test]
async fn sign_ins_and_refused_tokens_are_counted_by_method_and_outcome() {
    let app = TestApp::new().await;
    password_user(&app, "pat@example.com", "unprivileged").await;
    let recorder = recorder();
    let _local = metrics::set_default_local_recorder(&recorder);
    let router = metered(&app, &recorder);
    let mut browser = Browser::on(router.clone(), "192.0.2.10:40000");
    browser.sign_in("pat@example.com", "not the password", "/").await.expect_status(StatusCode::UNAUTHORIZED);
    browser.sign_in("pat@example.com", PASSWORD, "/").await.expect_status(StatusCode::SEE_OTHER);
    send(router.clone(), get("/v0/users", Some("not-a-token"))).await.expect_auth_error("invalid_token");

    let text = scrape(&router).await;
    let sign_ins =
        |outcome: &str| sample(&text, &format!(r#"ferrozone_sign_ins_total{{method="password",outcome="{outcome}"}}"#));
    assert_eq!((sign_ins("refused"), sign_ins("success")), (Some(1.0), Some(1.0)), "{text}");
    let refused = r#"ferrozone_tokens_refused_total{kind="api_token",reason="invalid"}"#;
    assert_eq!(sample(&text, refused), Some(1.0), "{text}");
}
