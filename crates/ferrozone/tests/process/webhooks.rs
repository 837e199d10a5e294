//! Webhooks across a crash: `serve` killed (`kill -9`) while it delivers to a real
//! receiver, then started again, loses no delivery and keeps the order. The outbox is the
//! audit log and a cursor per endpoint (docs/design/webhooks.md, "Webhooks"), both in the
//! database, so what was committed before the crash is delivered after it.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::post;
use axum::Router;
use serde_json::{json, Value};

use crate::harness::{Api, Server};

/// How long the receiver takes to answer: deliveries lag behind the creates, so the kill
/// comes while some are still to be made.
const ANSWER_DELAY: Duration = Duration::from_millis(150);

/// The seqs received, in the order received.
#[derive(Clone, Default)]
struct Received(Arc<Mutex<Vec<i64>>>);

impl Received {
    fn seqs(&self) -> Vec<i64> {
        self.0.lock().unwrap().clone()
    }
}

async fn receive(State(received): State<Received>, body: Bytes) -> StatusCode {
    let event: Value = serde_json::from_slice(&body).unwrap();
    received.0.lock().unwrap().push(event["seq"].as_i64().unwrap());
    tokio::time::sleep(ANSWER_DELAY).await;
    StatusCode::OK
}

async fn start_receiver() -> (Received, String) {
    let received = Received::default();
    let app = Router::new().route("/hook", post(receive)).with_state(received.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (received, url)
}

/// The seqs of the `device.created` events, oldest first.
async fn created_seqs(api: &Api) -> Vec<i64> {
    let (status, body) = api.get("/v0/audit_events?action=device.created&limit=500").await;
    assert_eq!(status, 200, "{body}");
    let mut seqs: Vec<i64> = body["data"].as_array().unwrap().iter().map(|e| e["seq"].as_i64().unwrap()).collect();
    seqs.sort_unstable();
    seqs
}

#[tokio::test]
async fn a_crash_while_delivering_loses_no_event_and_keeps_the_order() {
    let dir = tempfile::tempdir().unwrap();
    let env = [("FERROZONE_WEBHOOK_ALLOW_PRIVATE", "true"), ("FERROZONE_MAX_DEVICES_PER_USER", "100")];
    let (received, url) = start_receiver().await;

    let server = Server::start(dir.path(), &env).await;
    let token = server.printed_token().expect("the first start prints a token");
    let api = Api::new(&server.base, &token);
    let hook = json!({"webhook": {"url": url, "events": ["device.created"]}});
    let (status, body) = api.call(reqwest::Method::POST, "/v0/webhooks", Some(hook)).await.unwrap();
    assert_eq!(status, 201, "{body}");
    let admin = api.admin_id().await;
    for _ in 0..20 {
        api.create_device(&admin).await.unwrap().unwrap();
    }
    let expected = created_seqs(&api).await;
    assert_eq!(expected.len(), 20);
    server.kill();
    let before_restart = received.seqs().len();

    let server = Server::start(dir.path(), &env).await;
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let seqs = received.seqs();
        if expected.iter().all(|seq| seqs.contains(seq)) {
            break;
        }
        assert!(Instant::now() < deadline, "after the restart, only {seqs:?} of {expected:?} were delivered");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    drop(server);

    let seqs = received.seqs();
    assert!(before_restart < expected.len(), "the crash came after every delivery: nothing was tested");
    assert!(seqs.windows(2).all(|pair| pair[0] <= pair[1]), "out of order: {seqs:?}");
    assert!(seqs.iter().all(|seq| expected.contains(seq)), "an event the filter excludes: {seqs:?}");
}
