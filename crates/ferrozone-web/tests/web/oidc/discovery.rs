//! Discovery of a provider that accepts connections and never answers: one outbound
//! connection however many sign-ins start meanwhile, and a failure kept for a few seconds
//! (docs/design/identity-providers.md, "OpenID Connect").

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::http::{Method, StatusCode};
use ferrozone_domain::providers::Providers;
use ferrozone_http::{AppState, WebSettings};
use serde_json::json;

use crate::helpers::{json_request, send_any, TestApp};

#[tokio::test]
async fn fifty_concurrent_starts_while_the_provider_hangs_make_one_connection() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let discovery = format!("http://{}/.well-known/openid-configuration", listener.local_addr().unwrap());
    let accepted = Arc::new(AtomicUsize::new(0));
    let release = Arc::new(tokio::sync::Notify::new());
    let (counter, closing) = (accepted.clone(), release.clone());
    // Accepts and never answers, until `release` closes what it holds.
    let hanging = tokio::spawn(async move {
        let mut held = Vec::new();
        loop {
            tokio::select! {
                Ok((socket, _)) = listener.accept() => {
                    counter.fetch_add(1, Ordering::SeqCst);
                    held.push(socket);
                }
                () = closing.notified() => held.clear(),
            }
        }
    });
    let app = TestApp::with_settings(|s| s.sign_in_flows_per_address = 1000).await;
    let config = json!([{"id": "corp", "client_id": "c", "client_secret": "s",
                         "discovery_document_uri": discovery, "auto_create_users": false}]);
    let providers = Providers::parse(Some(&config.to_string()), "O", None, "S").unwrap();
    let web = WebSettings {
        external_url: "http://localhost:13000".into(),
        secure_cookies: false,
        providers,
        saml: Default::default(),
    };
    let router = crate::helpers::app(AppState::with_web(app.domain.clone(), web));
    let start = || send_any(router.clone(), json_request(Method::GET, "/auth/oidc/corp", None, None));

    let starts: Vec<_> = (0..50).map(|_| tokio::spawn(start())).collect();
    while accepted.load(Ordering::SeqCst) == 0 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // Time for every start to reach the discovery in flight.
    tokio::time::sleep(Duration::from_millis(300)).await;
    release.notify_one();
    for answer in starts {
        assert_eq!(answer.await.unwrap().status, StatusCode::SERVICE_UNAVAILABLE);
    }
    assert_eq!(accepted.load(Ordering::SeqCst), 1, "50 starts, one connection to the provider");

    let again = start().await;
    assert_eq!(again.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(again.header("retry-after"), Some("60"));
    assert_eq!(accepted.load(Ordering::SeqCst), 1, "the failure is kept: no new connection");
    hanging.abort();
}
