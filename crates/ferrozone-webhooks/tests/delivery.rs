//! Delivery to a real receiving HTTP server started by each test, on the backend the
//! environment selects (`FERROZONE_TEST_DATABASE_URL`, see `ferrozone_store::testing`).
//! Tests wait for what the receiver saw or the attempts recorded, never for wall time.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, post};
use axum::Router;
use ferrozone_domain::audit::{Actor, NewAuditEvent, Origin, Subject};
use ferrozone_domain::crypto::Cipher;
use ferrozone_domain::webhook::validate::{NewWebhook, WebhookChanges};
use ferrozone_domain::webhook::{Attempt, Outcome};
use ferrozone_domain::{Domain, Principal, Settings};
use ferrozone_store::testing::{fresh, TestDb};
use ferrozone_webhooks::client::Limits;
use ferrozone_webhooks::{Options, Worker};
use hmac::{Hmac, Mac};
use sha2::Sha256;
use tokio::sync::Notify;
use zeroize::Zeroizing;

const SECRET: &str = "a receiver's secret, 0123456789";

/// What the receiver answers, in turn; once the script is done, 200.
#[derive(Clone, Copy)]
enum Answer {
    Status(u16),
    /// Sleeps well past the worker's deadline.
    Hang,
    Redirect,
}

/// One request received.
#[derive(Clone, Debug)]
struct Received {
    headers: HeaderMap,
    body: Bytes,
}

#[derive(Clone, Default)]
struct Receiver {
    script: Arc<Mutex<VecDeque<Answer>>>,
    received: Arc<Mutex<Vec<Received>>>,
    elsewhere: Arc<Mutex<u32>>,
    changed: Arc<Notify>,
}

impl Receiver {
    async fn start(script: &[Answer]) -> (Self, SocketAddr) {
        let receiver = Receiver { script: Arc::new(Mutex::new(script.iter().copied().collect())), ..Self::default() };
        let app = Router::new()
            .route("/hook", post(receive))
            .route("/elsewhere", any(elsewhere))
            .with_state(receiver.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind the receiver");
        let addr = listener.local_addr().expect("the receiver's address");
        tokio::spawn(async move { axum::serve(listener, app).await });
        (receiver, addr)
    }

    fn received(&self) -> Vec<Received> {
        self.received.lock().expect("lock").clone()
    }
}

async fn receive(State(r): State<Receiver>, headers: HeaderMap, body: Bytes) -> Response {
    let answer = r.script.lock().expect("lock").pop_front();
    r.received.lock().expect("lock").push(Received { headers, body });
    r.changed.notify_waiters();
    match answer {
        None => StatusCode::OK.into_response(),
        Some(Answer::Status(code)) => StatusCode::from_u16(code).expect("a status").into_response(),
        Some(Answer::Hang) => {
            tokio::time::sleep(Duration::from_secs(30)).await;
            StatusCode::OK.into_response()
        }
        Some(Answer::Redirect) => (StatusCode::FOUND, [("location", "/elsewhere")]).into_response(),
    }
}

async fn elsewhere(State(r): State<Receiver>) -> StatusCode {
    *r.elsewhere.lock().expect("lock") += 1;
    StatusCode::OK
}

struct Setup {
    db: TestDb,
    domain: Arc<Domain>,
}

async fn setup(allow_private: bool) -> Setup {
    let db = fresh().await.expect("a test database");
    let settings = Settings { webhook_allow_private: allow_private, ..Settings::standard() };
    let cipher = Cipher::from_base64(&Cipher::generate_key()).expect("a key");
    let domain = Domain::open(db.store.clone(), Arc::new(settings), cipher).await.expect("the domain");
    Setup { db, domain: Arc::new(domain) }
}

/// Fast pacing for tests: a short deadline, so a hanging receiver fails quickly.
fn options() -> Options {
    Options {
        poll: Duration::from_millis(20),
        first_backoff: Duration::from_millis(20),
        max_backoff: Duration::from_millis(100),
        limits: Limits { connect_timeout: Duration::from_secs(2), timeout: Duration::from_millis(700) },
        ..Options::default()
    }
}

impl Setup {
    async fn register(&self, url: &str, events: &[&str]) -> uuid::Uuid {
        let input = NewWebhook {
            url: Some(url.to_owned()),
            events: Some(events.iter().map(|e| (*e).to_owned()).collect()),
            secret: Some(Zeroizing::new(SECRET.to_owned())),
            ..NewWebhook::default()
        };
        self.domain.create_webhook(&Principal::operator(), &input).await.expect("create a webhook").webhook.id
    }

    async fn append(&self, actions: &[&str]) {
        let events: Vec<NewAuditEvent> = actions
            .iter()
            .enumerate()
            .map(|(i, action)| {
                let subject = Subject { kind: "device".into(), id: Some(format!("d{i}")) };
                NewAuditEvent::new(Actor::cli(), action, subject, Origin::default())
            })
            .collect();
        self.db.store.append_audit_events(&events).await.expect("append events");
    }

    fn start(&self, options: Options) -> tokio::task::JoinHandle<anyhow::Result<()>> {
        let worker = Worker::new(self.domain.webhook_outbox(), options).expect("a worker");
        tokio::spawn(worker.run())
    }

    async fn attempts(&self, id: uuid::Uuid) -> Vec<Attempt> {
        let mut attempts = self.domain.webhook_attempts(&Principal::operator(), id).await.expect("attempts");
        attempts.reverse();
        attempts
    }

    /// Waits (up to a generous bound) until `done` holds for the attempts, oldest first.
    async fn wait_for_attempts(&self, id: uuid::Uuid, done: impl Fn(&[Attempt]) -> bool) -> Vec<Attempt> {
        for _ in 0..1000 {
            let attempts = self.attempts(id).await;
            if done(&attempts) {
                return attempts;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("the attempts never got there: {:?}", self.attempts(id).await);
    }
}

fn body_json(received: &Received) -> serde_json::Value {
    serde_json::from_slice(&received.body).expect("a JSON body")
}

/// The receiver's check, as docs/operations.md describes it.
fn verify(received: &Received, secret: &str) -> bool {
    let header = received.headers.get("ferrozone-signature").and_then(|v| v.to_str().ok()).unwrap_or_default();
    let mut parts = header.split(',');
    let t = parts.next().and_then(|p| p.strip_prefix("t=")).unwrap_or_default();
    let v1 = parts.next().and_then(|p| p.strip_prefix("v1=")).unwrap_or_default();
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(secret.as_bytes()).expect("a key");
    mac.update(format!("{t}.").as_bytes());
    mac.update(&received.body);
    let fresh = t.parse::<i64>().is_ok_and(|t| (chrono_now() - t).abs() < 300);
    fresh && hex::decode(v1).is_ok_and(|sig| mac.verify_slice(&sig).is_ok())
}

fn chrono_now() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("after 1970").as_secs() as i64
}

#[tokio::test]
async fn events_arrive_signed_in_order_and_filtered() {
    let s = setup(true).await;
    let (receiver, addr) = Receiver::start(&[]).await;
    let id = s.register(&format!("http://{addr}/hook"), &["device."]).await;
    s.append(&["device.created", "user.created", "device.updated", "device.deleted"]).await;
    let _worker = s.start(options());
    let attempts = s.wait_for_attempts(id, |a| a.len() == 3).await;
    assert!(attempts.iter().all(|a| a.outcome == Outcome::Delivered && a.status == Some(200)), "{attempts:?}");

    let received = receiver.received();
    let actions: Vec<String> =
        received.iter().map(|r| body_json(r)["action"].as_str().unwrap_or("").to_owned()).collect();
    assert_eq!(actions, ["device.created", "device.updated", "device.deleted"], "in order, user.created filtered out");
    let seqs: Vec<i64> = received.iter().map(|r| body_json(r)["seq"].as_i64().unwrap_or(0)).collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");
    for r in &received {
        assert!(verify(r, SECRET), "the signature verifies: {:?}", r.headers);
        assert!(!verify(r, "another secret, 0123456789"), "and only with the secret");
        let body = body_json(r);
        assert_eq!(r.headers["ferrozone-event"], body["action"].as_str().unwrap_or_default());
        assert_eq!(r.headers["ferrozone-delivery"], body["id"].as_str().unwrap_or_default());
        assert_eq!(r.headers["content-type"], "application/json");
        assert!(r.headers["user-agent"].to_str().is_ok_and(|ua| ua.starts_with("ferrozone/")));
        assert!(body["hash"].is_string() && body["subject"]["kind"] == "device", "the event's JSON: {body}");
    }
    let webhook = s.domain.get_webhook(&Principal::operator(), id).await.expect("the webhook");
    assert_eq!(webhook.pending, 0);
    assert_eq!(webhook.last_attempt.map(|a| a.outcome), Some(Outcome::Delivered));
}

#[tokio::test]
async fn failures_are_retried_after_5xx_and_timeouts_keeping_the_order() {
    let s = setup(true).await;
    let (receiver, addr) = Receiver::start(&[Answer::Status(500), Answer::Hang, Answer::Status(503)]).await;
    let id = s.register(&format!("http://{addr}/hook"), &[]).await;
    s.append(&["device.created", "device.updated"]).await;
    let _worker = s.start(options());
    // The endpoint's own `webhook.created` is the first event after its cursor.
    let attempts = s.wait_for_attempts(id, |a| a.iter().filter(|a| a.outcome == Outcome::Delivered).count() == 3).await;

    let outcomes: Vec<(i64, Outcome, Option<u16>)> = attempts.iter().map(|a| (a.seq, a.outcome, a.status)).collect();
    let first = attempts[0].seq;
    assert_eq!(
        outcomes,
        [
            (first, Outcome::Failed, Some(500)),
            (first, Outcome::Failed, None),
            (first, Outcome::Failed, Some(503)),
            (first, Outcome::Delivered, Some(200)),
            (first + 1, Outcome::Delivered, Some(200)),
            (first + 2, Outcome::Delivered, Some(200)),
        ]
    );
    assert_eq!(attempts[1].error.as_deref(), Some("timed out"));
    let seqs: Vec<i64> = receiver.received().iter().map(|r| body_json(r)["seq"].as_i64().unwrap_or(0)).collect();
    assert_eq!(seqs, [first, first, first, first, first + 1, first + 2], "later events wait for the first");
    let actions: Vec<String> =
        receiver.received().iter().map(|r| body_json(r)["action"].as_str().unwrap_or("").to_owned()).collect();
    assert_eq!(actions[3..], ["webhook.created", "device.created", "device.updated"]);
    let webhook = s.domain.get_webhook(&Principal::operator(), id).await.expect("the webhook");
    assert_eq!(webhook.failing_since, None, "delivered: no longer failing");
}

#[tokio::test]
async fn a_redirect_is_not_followed() {
    let s = setup(true).await;
    let (receiver, addr) = Receiver::start(&[Answer::Redirect]).await;
    let id = s.register(&format!("http://{addr}/hook"), &[]).await;
    s.append(&["device.created"]).await;
    let _worker = s.start(options());
    let attempts = s.wait_for_attempts(id, |a| a.iter().any(|a| a.outcome == Outcome::Delivered)).await;
    assert_eq!((attempts[0].outcome, attempts[0].status), (Outcome::Failed, Some(302)));
    assert_eq!(*receiver.elsewhere.lock().expect("lock"), 0, "the redirect's target was never called");
}

#[tokio::test]
async fn private_addresses_are_refused_without_the_setting() {
    let s = setup(false).await;
    let (receiver, addr) = Receiver::start(&[]).await;
    // A name, so registration accepts it: the check is on the address it resolves to.
    let id = s.register(&format!("http://localhost:{}/hook", addr.port()), &[]).await;
    let literal = format!("http://{addr}/hook");
    let refused = s
        .domain
        .create_webhook(&Principal::operator(), &NewWebhook { url: Some(literal), ..NewWebhook::default() })
        .await;
    assert!(matches!(refused, Err(ferrozone_domain::DomainError::Invalid(e)) if e.has("url")), "a literal: 422");
    s.append(&["device.created"]).await;
    let _worker = s.start(options());
    let attempts = s.wait_for_attempts(id, |a| a.len() >= 2).await;
    assert!(attempts.iter().all(|a| a.outcome == Outcome::RefusedAddress && a.status.is_none()), "{attempts:?}");
    assert!(receiver.received().is_empty(), "nothing was sent");
    let webhook = s.domain.get_webhook(&Principal::operator(), id).await.expect("the webhook");
    assert!(webhook.failing_since.is_some() && webhook.pending >= 1);
}

#[tokio::test]
async fn an_event_failing_past_the_limit_is_given_up_and_the_next_delivered() {
    let s = setup(true).await;
    let (receiver, addr) = Receiver::start(&[Answer::Status(500), Answer::Status(500)]).await;
    let id = s.register(&format!("http://{addr}/hook"), &[]).await;
    s.append(&["device.created", "device.updated"]).await;
    let _worker = s.start(Options { give_up_after: Duration::ZERO, ..options() });
    let attempts = s.wait_for_attempts(id, |a| a.iter().any(|a| a.outcome == Outcome::Delivered)).await;
    let outcomes: Vec<Outcome> = attempts.iter().map(|a| a.outcome).collect();
    // The endpoint's own `webhook.created` comes first: it is the first event after its cursor.
    assert_eq!(outcomes, [Outcome::GaveUp, Outcome::GaveUp, Outcome::Delivered], "each failed once, past the limit");
    assert_eq!(receiver.received().len(), 3);
}

#[tokio::test]
async fn another_endpoints_url_is_delivered_by_origin_and_fingerprint_never_its_token() {
    let s = setup(true).await;
    let (receiver, addr) = Receiver::start(&[]).await;
    let watcher = s.register(&format!("http://{addr}/hook"), &["webhook."]).await;
    // Another endpoint, whose URL carries a credential; it listens to nothing here.
    let other = s.register("https://chat.example.com/hooks/T0KEN-IN-PATH?key=T0KEN-IN-QUERY", &["device."]).await;
    let moved = WebhookChanges {
        url: Some("https://chat.example.com/hooks/T0KEN-IN-PATH?key=OTHER-T0KEN".to_owned()),
        ..WebhookChanges::default()
    };
    s.domain.update_webhook(&Principal::operator(), other, &moved).await.expect("update the endpoint");
    s.domain.delete_webhook(&Principal::operator(), other).await.expect("delete the endpoint");
    let _worker = s.start(options());
    s.wait_for_attempts(watcher, |a| a.iter().filter(|a| a.outcome == Outcome::Delivered).count() == 4).await;

    let received = receiver.received();
    let actions: Vec<String> =
        received.iter().map(|r| body_json(r)["action"].as_str().unwrap_or("").to_owned()).collect();
    assert_eq!(actions, ["webhook.created", "webhook.created", "webhook.updated", "webhook.deleted"]);
    for r in &received[1..] {
        let body = String::from_utf8_lossy(&r.body);
        assert!(!body.contains("T0KEN") && !body.contains("/hooks"), "delivered: {body}");
        assert!(body.contains("https://chat.example.com:443"), "the origin is named: {body}");
    }
}

#[tokio::test]
async fn refused_sign_ins_of_unknown_accounts_do_not_hold_up_real_events() {
    let s = setup(true).await;
    let (everything, addr) = Receiver::start(&[]).await;
    let all = s.register(&format!("http://{addr}/hook"), &[]).await;
    let (named, named_addr) = Receiver::start(&[]).await;
    let summaries = s.register(&format!("http://{named_addr}/hook"), &["user.sign_in_refused_summary"]).await;
    // A flood of made-up emails from 20 client networks.
    for i in 0..20 {
        for j in 0..3 {
            let address = format!("198.51.100.{i}").parse().expect("an address");
            let account = format!("made-up-{i}-{j}@example.com");
            s.domain.record_refused_sign_in(&account, "password", "bad_password", address).await;
        }
    }
    s.domain.record_refused_sign_in_summaries(true).await;
    s.append(&["device.created"]).await;
    let _worker = s.start(options());

    let attempts = s.wait_for_attempts(all, |a| a.len() >= 3).await;
    let actions: Vec<String> =
        everything.received().iter().map(|r| body_json(r)["action"].as_str().unwrap_or("").to_owned()).collect();
    assert_eq!(actions, ["webhook.created", "webhook.created", "device.created"], "the summaries were not sent");
    assert!(attempts.iter().all(|a| a.outcome == Outcome::Delivered), "{attempts:?}");
    s.wait_for_attempts(summaries, |a| a.len() == 20).await;
    let counts: Vec<serde_json::Value> = named.received().iter().map(|r| count_of(&body_json(r))).collect();
    assert_eq!(counts, vec![serde_json::json!(3); 20], "an endpoint that names them gets one per network");
}

/// The `count` a summary of refused sign-ins recorded.
fn count_of(event: &serde_json::Value) -> serde_json::Value {
    let changes = event["changes"].as_array().cloned().unwrap_or_default();
    changes.into_iter().find(|c| c["field"] == "count").map_or(serde_json::Value::Null, |c| c["after"].clone())
}
