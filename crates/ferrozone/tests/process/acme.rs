//! `serve` with automatic certificates: Debian's pebble, a real ACME server started by the
//! test, validates the TLS-ALPN-01 challenge on serve's own HTTPS port; serve then answers
//! HTTPS with the certificate pebble issued, and keeps it in its data directory.

use std::process::Child;
use std::time::{Duration, Instant};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;

use crate::harness::{command, free_port};

#[path = "../../../ferrozone-acme/tests/pebble/support.rs"]
#[allow(dead_code, reason = "the ACME crate's pebble harness; this test uses part of it")]
mod pebble;

#[tokio::test]
async fn serve_obtains_a_certificate_over_acme_and_serves_https_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let ca = pebble::TestCa::new();
    let port = free_port();
    let Some(pebble) = pebble::Pebble::start(dir.path(), &ca, port).await else { return };
    let data_dir = dir.path().join("data");
    let (listen, external_url) = (format!("127.0.0.1:{port}"), format!("https://{}:{port}", pebble::HOST));
    let ca_file = pebble.ca_file.to_string_lossy().into_owned();
    let env = [
        ("FERROZONE_LISTEN", listen.as_str()),
        ("FERROZONE_EXTERNAL_URL", external_url.as_str()),
        ("FERROZONE_ACME", "true"),
        ("FERROZONE_ACME_DIRECTORY_URL", pebble.directory_url.as_str()),
        ("FERROZONE_ACME_CA_FILE", ca_file.as_str()),
    ];
    let mut server = Stopped(command(&data_dir, &env).arg("serve").spawn().expect("ferrozone starts"));

    // Until the order completes, a handshake finds no certificate; the minute is a bound
    // on a stuck CA, not a timing assertion.
    let root = pebble.issuing_root(&ca).await;
    let deadline = Instant::now() + Duration::from_secs(60);
    let issued = loop {
        match pebble::served_certificate(port, std::slice::from_ref(&root)).await {
            Ok(certificate) => break certificate,
            Err(e) if Instant::now() < deadline => {
                assert!(server.0.try_wait().unwrap().is_none(), "serve exited while waiting: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => panic!("no certificate from pebble was served: {e}"),
        }
    };

    // The API answers over HTTPS to a client that trusts pebble's root alone, with HSTS.
    let client = reqwest::Client::builder()
        .use_rustls_tls()
        .tls_built_in_root_certs(false)
        .add_root_certificate(reqwest::Certificate::from_der(&root).unwrap())
        .build()
        .unwrap();
    let response = client.get(format!("{external_url}/healthz")).send().await.expect("HTTPS to serve");
    assert_eq!(response.status(), 200);
    assert!(response.headers().contains_key("strict-transport-security"));

    // The certificate served is the one kept in the data directory for the next start.
    let stored = std::fs::read_to_string(data_dir.join("acme").join(format!("{}.pem", pebble::HOST))).unwrap();
    let first = stored.split("-----END CERTIFICATE-----").next().unwrap();
    let stored = CertificateDer::from_pem_slice(format!("{first}-----END CERTIFICATE-----\n").as_bytes()).unwrap();
    assert_eq!(stored.as_ref(), issued.as_ref());
}

/// The server, killed when the test ends, however it ends.
struct Stopped(Child);

impl Drop for Stopped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
