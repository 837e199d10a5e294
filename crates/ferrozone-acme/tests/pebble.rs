//! Automatic certificates against a real ACME server: Debian's pebble, which validates the
//! TLS-ALPN-01 challenge by connecting to the test's HTTPS listener.

#![allow(clippy::unwrap_used)]

#[path = "pebble/support.rs"]
mod support;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use ferrozone_acme::{Acme, Settings, Status};
use rustls::server::ResolvesServerCertUsingSni;
use support::{served_certificate, Listener, Pebble, TestCa, HOST};
use tokio::sync::watch;

fn settings(pebble: &Pebble, cache_dir: &Path) -> Settings {
    Settings {
        host: HOST.to_owned(),
        directory_url: pebble.directory_url.clone(),
        contact_email: Some("admin@example.com".to_owned()),
        ca_file: Some(pebble.ca_file.clone()),
        cache_dir: cache_dir.to_owned(),
    }
}

/// Waits for the task to settle on serving a certificate, and returns its renewal time;
/// a failed order fails the test with the error. The minute is a safety net for a stuck
/// CA, not a timing assertion.
async fn serving(status: &mut watch::Receiver<Status>) -> SystemTime {
    let settled = status.wait_for(|s| matches!(s, Status::Waiting { .. } | Status::Retrying { .. }));
    let settled = tokio::time::timeout(Duration::from_secs(60), settled).await.expect("the order settles").unwrap();
    match &*settled {
        Status::Waiting { renew_at, .. } => *renew_at,
        other => panic!("the order failed: {other:?}"),
    }
}

#[tokio::test]
async fn issues_a_certificate_and_keeps_it_across_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let cache_dir = dir.path().join("acme");
    let ca = TestCa::new();
    let (socket, port) = Listener::bind().await;
    let Some(pebble) = Pebble::start(dir.path(), &ca, port).await else { return };

    let acme = Acme::start(settings(&pebble, &cache_dir)).unwrap();
    let listener = Listener::serve(socket, acme.resolver);
    let mut status = acme.status;
    let task = tokio::spawn(acme.task);
    let renew_at = serving(&mut status).await;
    assert!(renew_at > SystemTime::now() + Duration::from_secs(24 * 3600), "{renew_at:?}");

    // A client that trusts only pebble's root accepts the certificate for the host.
    let roots = [pebble.issuing_root(&ca).await];
    let issued = served_certificate(listener.port, &roots).await.unwrap();
    assert_private(&cache_dir.join("account.json"));
    assert_private(&cache_dir.join(format!("{HOST}.pem")));
    assert_private(&cache_dir);

    // Restarted, it serves the stored certificate before its task runs, and the task
    // finds nothing to do.
    task.abort();
    drop(listener);
    let (socket, _) = Listener::bind().await;
    let acme = Acme::start(settings(&pebble, &cache_dir)).unwrap();
    let listener = Listener::serve(socket, acme.resolver);
    assert_eq!(served_certificate(listener.port, &roots).await.unwrap(), issued);
    let mut status = acme.status;
    let task = tokio::spawn(acme.task);
    assert_eq!(serving(&mut status).await, renew_at);
    assert_eq!(served_certificate(listener.port, &roots).await.unwrap(), issued);
    task.abort();
}

#[tokio::test]
async fn renews_a_certificate_near_its_expiry() {
    let dir = tempfile::tempdir().unwrap();
    let cache_dir = dir.path().join("acme");
    std::fs::create_dir_all(&cache_dir).unwrap();
    let ca = TestCa::new();
    // 59 days into a 60-day lifetime: well past the last third.
    std::fs::write(cache_dir.join(format!("{HOST}.pem")), ca.certificate(&[HOST], 59, 1)).unwrap();
    let (socket, port) = Listener::bind().await;
    let Some(pebble) = Pebble::start(dir.path(), &ca, port).await else { return };

    let acme = Acme::start(settings(&pebble, &cache_dir)).unwrap();
    let listener = Listener::serve(socket, acme.resolver);
    let old = served_certificate(listener.port, &[ca.der()]).await.unwrap();

    let mut status = acme.status;
    let task = tokio::spawn(acme.task);
    let renew_at = serving(&mut status).await;
    assert!(renew_at > SystemTime::now() + Duration::from_secs(24 * 3600), "{renew_at:?}");
    let root = pebble.issuing_root(&ca).await;
    let renewed = served_certificate(listener.port, &[root]).await.unwrap();
    assert_ne!(renewed, old);
    // The new certificate is the one stored for the next start.
    let stored = std::fs::read_to_string(cache_dir.join(format!("{HOST}.pem"))).unwrap();
    let stored = rustls::pki_types::pem::PemObject::from_pem_slice(stored.as_bytes()).unwrap();
    assert_eq!(renewed, stored);
    task.abort();
}

#[tokio::test]
async fn an_unanswered_challenge_fails_the_order() {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new();
    let (socket, port) = Listener::bind().await;
    let Some(pebble) = Pebble::start(dir.path(), &ca, port).await else { return };

    // pebble validates against a listener that does not know the challenge.
    let _listener = Listener::serve(socket, Arc::new(ResolvesServerCertUsingSni::new()));
    let acme = Acme::start(settings(&pebble, &dir.path().join("acme"))).unwrap();
    let mut status = acme.status;
    let task = tokio::spawn(acme.task);
    let failed = status.wait_for(|s| !matches!(s, Status::Starting | Status::Ordering));
    let failed = tokio::time::timeout(Duration::from_secs(60), failed).await.unwrap().unwrap().clone();
    let Status::Retrying { error, .. } = failed else { panic!("{failed:?}") };
    // The CA's refusal comes while waiting for the validation, or already in its answer to
    // the challenge's announcement when it validated at once (under load, it can).
    assert!(error.contains("validation") || error.contains("for the tls-alpn-01 challenge"), "{error}");
    assert!(!dir.path().join("acme").join(format!("{HOST}.pem")).exists());
    task.abort();
}

#[tokio::test]
async fn serves_the_stored_certificate_while_the_ca_is_unreachable() {
    let dir = tempfile::tempdir().unwrap();
    let cache_dir = dir.path().join("acme");
    std::fs::create_dir_all(&cache_dir).unwrap();
    let ca = TestCa::new();
    std::fs::write(cache_dir.join(format!("{HOST}.pem")), ca.certificate(&[HOST], 59, 1)).unwrap();
    // A port nothing listens on.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let settings = Settings {
        host: HOST.to_owned(),
        directory_url: format!("https://{closed}/dir"),
        contact_email: None,
        ca_file: None,
        cache_dir: cache_dir.clone(),
    };

    let acme = Acme::start(settings).unwrap();
    let (socket, _) = Listener::bind().await;
    let listener = Listener::serve(socket, acme.resolver);
    let old = served_certificate(listener.port, &[ca.der()]).await.unwrap();
    let mut status = acme.status;
    let task = tokio::spawn(acme.task);
    let failed = status.wait_for(|s| matches!(s, Status::Retrying { .. }));
    let failed = tokio::time::timeout(Duration::from_secs(60), failed).await.unwrap().unwrap().clone();
    let Status::Retrying { at, error } = failed else { unreachable!() };
    assert!(at > SystemTime::now(), "the retry waits");
    assert!(error.contains("ACME account"), "{error}");
    assert_eq!(served_certificate(listener.port, &[ca.der()]).await.unwrap(), old);
    task.abort();
}

fn assert_private(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    let expected = if path.is_dir() { 0o700 } else { 0o600 };
    assert_eq!(mode, expected, "{}", path.display());
}
