//! The server with a test app on a real socket: handler deadlines and slow readers.

use std::net::SocketAddr;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::routing::get;
use axum::Router;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::{serve, Limits};

const BOUND: Duration = Duration::from_secs(30);
const BIG: usize = 64 << 20;

fn test_app() -> Router {
    let slow = || async {
        tokio::time::sleep(Duration::from_secs(3600)).await;
        "late"
    };
    let big = || async {
        let chunks = (0..BIG >> 16).map(|_| Ok::<_, std::convert::Infallible>(Bytes::from(vec![b'x'; 1 << 16])));
        Body::from_stream(futures_util::stream::iter(chunks))
    };
    Router::new().route("/v0/slow", get(slow)).route("/slow", get(slow)).route("/big", get(big))
}

async fn start(limits: Limits) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("a port");
    let address = listener.local_addr().expect("an address");
    tokio::spawn(serve(listener, test_app(), limits, None, std::future::pending()));
    address
}

fn short() -> Limits {
    Limits { request_timeout: Duration::from_secs(1), idle_timeout: Duration::from_secs(1), ..Limits::default() }
}

async fn exchange(address: SocketAddr, path: &str) -> String {
    let mut stream = TcpStream::connect(address).await.expect("connects");
    let head = format!("GET {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
    stream.write_all(head.as_bytes()).await.expect("sends");
    let mut answer = Vec::new();
    tokio::time::timeout(BOUND, stream.read_to_end(&mut answer)).await.expect("an answer").expect("reads");
    String::from_utf8_lossy(&answer).into_owned()
}

#[tokio::test]
async fn a_handler_past_its_deadline_is_answered_503_json_under_v0_and_a_page_elsewhere() {
    let address = start(short()).await;
    let api = exchange(address, "/v0/slow").await.to_ascii_lowercase();
    assert!(api.starts_with("http/1.1 503"), "{api}");
    for line in ["retry-after: 5", "cache-control: no-store", "x-content-type-options: nosniff", "application/json"] {
        assert!(api.contains(line), "{line} missing: {api}");
    }
    assert!(api.ends_with(r#"{"error":"service_unavailable"}"#), "{api}");
    let page = exchange(address, "/slow").await.to_ascii_lowercase();
    assert!(page.starts_with("http/1.1 503") && page.contains("text/html"), "{page}");
    assert!(page.contains("retry-after: 5") && page.contains("<h1>try again</h1>"), "{page}");
    // The transport's own page carries every page's headers.
    assert!(
        page.contains("content-security-policy: default-src 'none';") && page.contains("x-frame-options: deny"),
        "{page}"
    );
}

#[tokio::test]
async fn a_client_that_stops_reading_a_response_is_cut() {
    let address = start(short()).await;
    let mut stream = TcpStream::connect(address).await.expect("connects");
    stream.write_all(b"GET /big HTTP/1.1\r\nHost: t\r\n\r\n").await.expect("sends");
    // Stop reading for three times the stall limit (request + idle deadlines: 2 s).
    tokio::time::sleep(Duration::from_secs(6)).await;
    let mut received = 0usize;
    let mut buf = vec![0u8; 1 << 16];
    let read_all = async {
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => received += n,
            }
        }
    };
    tokio::time::timeout(BOUND, read_all).await.expect("the connection ends");
    assert!(received < BIG, "the whole {BIG}-byte response was kept for a client that stopped reading");
}

/// A server speaking TLS with a self-signed certificate for `localhost`, offering
/// `acme-tls/1` too, and a client configuration that trusts it and offers `alpn`.
async fn start_tls(dir: &std::path::Path, alpn: &[u8]) -> (SocketAddr, tokio_rustls::TlsConnector) {
    let key = rcgen::KeyPair::generate().expect("a key");
    let certificate = rcgen::CertificateParams::new(vec!["localhost".to_owned()])
        .expect("parameters")
        .self_signed(&key)
        .expect("a certificate");
    let (certificate_path, key_path) = (dir.join("tls.crt"), dir.join("tls.key"));
    std::fs::write(&certificate_path, certificate.pem()).expect("writes");
    std::fs::write(&key_path, key.serialize_pem()).expect("writes");
    let files = super::CertificateFiles::load(&certificate_path, &key_path).expect("loads");
    let tls = super::Tls { resolver: std::sync::Arc::new(files), acme_tls_alpn: true, hsts_max_age: 63_072_000 };
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("a port");
    let address = listener.local_addr().expect("an address");
    tokio::spawn(serve(listener, test_app(), short(), Some(tls), std::future::pending()));
    let mut roots = rustls::RootCertStore::empty();
    roots.add(certificate.der().clone()).expect("a root");
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("TLS versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![alpn.to_vec()];
    (address, tokio_rustls::TlsConnector::from(std::sync::Arc::new(config)))
}

/// The protocol negotiated and the response head (lower case) to `GET path` over TLS; an
/// empty head when the server closed the connection without answering.
async fn tls_exchange(
    address: SocketAddr,
    connector: &tokio_rustls::TlsConnector,
    path: &str,
) -> (Option<Vec<u8>>, String) {
    let tcp = TcpStream::connect(address).await.expect("connects");
    let name = rustls::pki_types::ServerName::try_from("localhost").expect("a name");
    let mut stream = connector.connect(name, tcp).await.expect("the handshake succeeds");
    let alpn = stream.get_ref().1.alpn_protocol().map(<[u8]>::to_vec);
    let head = format!("GET {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
    let _ = stream.write_all(head.as_bytes()).await;
    let mut answer = Vec::new();
    let read_head = async {
        let mut buf = [0u8; 4096];
        while !answer.windows(4).any(|w| w == b"\r\n\r\n") {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => answer.extend_from_slice(&buf[..n]),
            }
        }
    };
    tokio::time::timeout(BOUND, read_head).await.expect("an answer");
    (alpn, String::from_utf8_lossy(&answer).to_ascii_lowercase())
}

#[tokio::test]
async fn http_is_served_over_tls_and_an_acme_challenge_connection_is_closed_after_its_handshake() {
    let dir = tempfile::tempdir().expect("a directory");
    let (address, connector) = start_tls(dir.path(), b"http/1.1").await;
    let (alpn, answer) = tls_exchange(address, &connector, "/big").await;
    assert_eq!(alpn.as_deref(), Some(&b"http/1.1"[..]));
    assert!(answer.starts_with("http/1.1 200"), "{answer}");

    let (address, connector) = start_tls(dir.path(), super::ACME_TLS_ALPN).await;
    let (alpn, answer) = tls_exchange(address, &connector, "/big").await;
    assert_eq!(alpn.as_deref(), Some(super::ACME_TLS_ALPN));
    assert_eq!(answer, "", "no HTTP after an acme-tls/1 handshake");
}

#[tokio::test]
async fn every_answer_over_tls_carries_hsts_the_servers_own_503_included() {
    let dir = tempfile::tempdir().expect("a directory");
    let (address, connector) = start_tls(dir.path(), b"http/1.1").await;
    for (path, status) in [("/big", "200"), ("/missing", "404"), ("/v0/slow", "503"), ("/slow", "503")] {
        let (_, head) = tls_exchange(address, &connector, path).await;
        assert!(head.starts_with(&format!("http/1.1 {status}")), "{path}: {head}");
        assert!(head.contains("strict-transport-security: max-age=63072000\r\n"), "{path}: {head}");
    }
    let plain = exchange(start(short()).await, "/v0/slow").await.to_ascii_lowercase();
    assert!(plain.starts_with("http/1.1 503") && !plain.contains("strict-transport-security"), "{plain}");
}
