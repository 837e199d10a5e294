//! The outbox against a real SMTP server (aiosmtpd, started by each test through
//! `tests/smtp/sink`), on the backend the environment selects (`FERROZONE_TEST_DATABASE_URL`).
//! Tests wait for what the server received or what the outbox recorded, never for wall time.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use ferrozone_domain::crypto::Cipher;
use ferrozone_domain::service::sign_in_links::{Invitation, NewInvitation};
use ferrozone_domain::sign_in_link::Delivery;
use ferrozone_domain::{Domain, Principal, Settings, Timestamp};
use ferrozone_mail::{Mailer, Options, SmtpSettings, Tls, Worker};
use ferrozone_store::testing::{fresh, TestDb};

#[path = "../../../tests/support/programs.rs"]
mod programs;

const SITE: &str = "https://vpn.example.com";

/// A running SMTP server that keeps what it accepts in a directory.
struct Sink {
    child: Child,
    port: u16,
    dir: tempfile::TempDir,
}

impl Sink {
    /// `None` (the test is skipped, but in CI) without Python.
    fn start(args: &[&str]) -> Option<Self> {
        programs::find("python3", "apt-get install python3-aiosmtpd")?;
        let dir = tempfile::tempdir().expect("a directory for the messages");
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/smtp/sink");
        let mut child = Command::new("bash")
            .arg(script)
            .arg("--dir")
            .arg(dir.path())
            .args(args)
            .stdout(Stdio::piped())
            .spawn()
            .expect("start the SMTP sink");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("its output")).read_line(&mut line).expect("its first line");
        let port = line.trim().strip_prefix("port ").and_then(|p| p.parse().ok()).expect("`port <n>`");
        Some(Sink { child, port, dir })
    }

    /// The messages accepted so far, oldest first: headers and decoded text.
    fn messages(&self) -> Vec<String> {
        let mut paths: Vec<PathBuf> = std::fs::read_dir(self.dir.path())
            .expect("read the messages")
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "eml"))
            .map(|p| p.with_extension("txt"))
            .collect();
        paths.sort();
        paths.iter().map(|p| std::fs::read_to_string(p).expect("a message")).collect()
    }
}

impl Drop for Sink {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

struct Setup {
    db: TestDb,
    domain: Arc<Domain>,
    cipher: Cipher,
}

async fn setup() -> Setup {
    let db = fresh().await.expect("a test database");
    let cipher = Cipher::from_base64(&Cipher::generate_key()).expect("a key");
    let domain = open(&db, &cipher).await;
    Setup { db, domain, cipher }
}

async fn open(db: &TestDb, cipher: &Cipher) -> Arc<Domain> {
    let settings = Settings { email_enabled: true, ..Settings::standard() };
    Arc::new(Domain::open(db.store.clone(), Arc::new(settings), cipher.clone()).await.expect("the domain"))
}

fn mailer(port: u16) -> Mailer {
    let settings = SmtpSettings {
        host: "127.0.0.1".into(),
        port,
        tls: Tls::None,
        username: None,
        password: None,
        from: "Ferrozone <vpn@example.com>".into(),
        timeout: Duration::from_secs(10),
    };
    Mailer::new(&settings).expect("a mailer")
}

/// Quick polls and retries, and a lease of 5 s rather than the default 120 s: a test that
/// aborts a worker may abort it between its claim and its record (a retry begins 20 ms after
/// a failure), and the next worker then waits for that lease to expire.
fn options() -> Options {
    Options {
        poll: Duration::from_millis(20),
        lease: Duration::from_secs(5),
        first_backoff: Duration::from_millis(20),
        max_backoff: Duration::from_millis(100),
        ..Options::default()
    }
}

async fn invite(domain: &Domain, email: &str) -> Invitation {
    let input = NewInvitation { email: Some(email.into()), ..NewInvitation::default() };
    domain.invite(&Principal::operator(), &input, SITE).await.expect("an invitation")
}

/// The delivery of the only invitation, once `done` says it is what the test waits for: far
/// longer than a retry after the worker's backoff takes, even on a loaded machine (a CI run
/// with PostgreSQL beside SQLite once missed a 20 s wait).
async fn delivery_when(domain: &Domain, done: impl Fn(&Delivery) -> bool) -> Delivery {
    for _ in 0..4500 {
        let listed = domain.list_invitations(&Principal::operator()).await.expect("the invitations");
        if let Some(delivery) = listed[0].delivery.clone().filter(|d| done(d)) {
            return delivery;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the delivery never came to the awaited state");
}

#[tokio::test]
async fn an_invitation_is_retried_after_a_temporary_refusal_and_sent_once() {
    let Some(sink) = Sink::start(&["--fail-first", "1"]) else { return };
    let setup = setup().await;
    let invitation = invite(&setup.domain, "ada@example.com").await;
    assert!(invitation.emailed && invitation.user_created);
    let worker = tokio::spawn(Worker::new(setup.domain.mail_outbox(), mailer(sink.port), options()).run());

    let delivery = delivery_when(&setup.domain, |d| d.sent_at.is_some()).await;
    worker.abort();
    assert_eq!(delivery.attempts, 1, "one failed attempt before the one that was sent");
    assert_eq!(delivery.last_error, None, "a sent message keeps no error");
    let messages = sink.messages();
    assert_eq!(messages.len(), 1, "{messages:?}");
    let message = &messages[0];
    assert!(message.contains("To: ada@example.com"), "{message}");
    assert!(message.contains("Subject: You are invited to the VPN"), "{message}");
    assert!(message.contains("From: Ferrozone <vpn@example.com>"), "{message}");
    assert!(message.contains(invitation.url.as_str()), "the link is in the message: {message}");
}

#[tokio::test]
async fn a_message_queued_while_the_server_is_down_is_sent_after_a_restart() {
    let setup = setup().await;
    // A port nobody listens on yet: the first process's attempts fail.
    let port = std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free port").port();
    let invitation = invite(&setup.domain, "grace@example.com").await;
    let first = tokio::spawn(Worker::new(setup.domain.mail_outbox(), mailer(port), options()).run());
    let failed = delivery_when(&setup.domain, |d| d.attempts >= 1).await;
    first.abort();
    assert!(failed.sent_at.is_none() && failed.gave_up_at.is_none());
    assert!(failed.last_error.is_some(), "the failure is recorded: {failed:?}");

    // Another process on the same database, with the server up now.
    let Some(sink) = Sink::start(&["--port", &port.to_string()]) else { return };
    let restarted = open(&setup.db, &setup.cipher).await;
    let second = tokio::spawn(Worker::new(restarted.mail_outbox(), mailer(port), options()).run());
    delivery_when(&restarted, |d| d.sent_at.is_some()).await;
    second.abort();
    let messages = sink.messages();
    assert_eq!(messages.len(), 1);
    assert!(messages[0].contains(invitation.url.as_str()));
}

#[tokio::test]
async fn a_permanent_refusal_is_given_up_with_the_servers_answer() {
    let Some(sink) = Sink::start(&["--refuse-all"]) else { return };
    let setup = setup().await;
    invite(&setup.domain, "linus@example.com").await;
    let worker = tokio::spawn(Worker::new(setup.domain.mail_outbox(), mailer(sink.port), options()).run());
    let delivery = delivery_when(&setup.domain, |d| d.gave_up_at.is_some()).await;
    worker.abort();
    assert_eq!(delivery.attempts, 1, "a 5xx answer is not retried");
    let error = delivery.last_error.unwrap_or_default();
    assert!(error.contains("550") || error.contains("mailbox unavailable"), "{error}");
    assert!(sink.messages().is_empty());
}

#[tokio::test]
async fn a_queued_message_is_sealed_at_rest() {
    let setup = setup().await;
    let invitation = invite(&setup.domain, "margaret@example.com").await;
    let secret = invitation.url.rsplit('/').next().expect("the link's secret").to_owned();
    // Lease it for no time at all: it stays due.
    let now = Timestamp::now();
    let leases = setup.db.store.claim_emails(uuid::Uuid::new_v4(), now, now, 10).await.expect("claim");
    assert_eq!(leases.len(), 1);
    let stored = &leases[0].message.0;
    assert!(!stored.windows(secret.len()).any(|w| w == secret.as_bytes()), "the link's secret is not stored in clear");
    assert!(!stored.windows(11).any(|w| w == b"margaret@ex"), "nor is the text");
    let opened = setup.domain.mail_outbox().open(&leases[0]).expect("it opens with the key");
    assert!(opened.text.contains(invitation.url.as_str()));
}
