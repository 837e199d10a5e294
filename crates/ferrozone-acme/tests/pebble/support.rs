//! The tests' world: a test CA, Debian's pebble (a real ACME server that really validates
//! the TLS-ALPN-01 challenge), the HTTPS listener that pebble validates against, and a TLS
//! client that reports the certificate it was served.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::server::ResolvesServerCert;
use rustls::{ClientConfig, RootCertStore, ServerConfig};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;
use tokio_rustls::{TlsAcceptor, TlsConnector};

#[path = "../../../../tests/support/programs.rs"]
mod programs;

pub const HOST: &str = "localhost";

/// A CA of the test's own: it signs pebble's HTTPS certificate (what
/// `FERROZONE_ACME_CA_FILE` is for) and the stored certificates the tests plant.
pub struct TestCa {
    issuer: CertifiedIssuer<'static, KeyPair>,
}

impl TestCa {
    pub fn new() -> Self {
        let mut params = CertificateParams::new(Vec::new()).expect("CA parameters");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let issuer = CertifiedIssuer::self_signed(params, KeyPair::generate().expect("CA key")).expect("CA");
        Self { issuer }
    }

    pub fn pem(&self) -> String {
        self.issuer.pem()
    }

    pub fn der(&self) -> CertificateDer<'static> {
        self.issuer.der().clone()
    }

    /// A certificate for `names` valid from `days_ago` days ago for `days_left` more days,
    /// with its key: the PEM text the ACME cache stores.
    pub fn certificate(&self, names: &[&str], days_ago: i64, days_left: i64) -> String {
        let names: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
        let mut params = CertificateParams::new(names).expect("parameters");
        let now = time::OffsetDateTime::now_utc();
        params.not_before = now - time::Duration::days(days_ago);
        params.not_after = now + time::Duration::days(days_left);
        let key = KeyPair::generate().expect("key");
        let certificate = params.signed_by(&key, &self.issuer).expect("certificate");
        format!("{}{}", certificate.pem(), key.serialize_pem())
    }
}

/// A pebble process on free ports, stopped on drop.
pub struct Pebble {
    child: Child,
    pub directory_url: String,
    management: SocketAddr,
    /// The test CA's root, which pebble's HTTPS certificate chains to.
    pub ca_file: PathBuf,
}

impl Pebble {
    /// Starts pebble validating TLS-ALPN-01 challenges on `tls_port`; `None` when pebble is
    /// not installed and the test is skipped (outside CI, see tests/support/programs.rs).
    pub async fn start(dir: &Path, ca: &TestCa, tls_port: u16) -> Option<Self> {
        let program = programs::find("pebble", "apt-get install pebble")?;
        let (listen, management, http) = (free_port().await, free_port().await, free_port().await);
        let ca_file = dir.join("test-ca.pem");
        std::fs::write(&ca_file, ca.pem()).expect("write CA");
        let server = ca.certificate(&[HOST, "127.0.0.1"], 1, 30);
        std::fs::write(dir.join("pebble.pem"), &server).expect("write pebble's certificate");
        let config = serde_json::json!({ "pebble": {
            "listenAddress": listen.to_string(),
            "managementListenAddress": management.to_string(),
            "certificate": dir.join("pebble.pem"),
            "privateKey": dir.join("pebble.pem"),
            "httpPort": http.port(),
            "tlsPort": tls_port,
            "ocspResponderURL": "",
            "externalAccountBindingRequired": false,
        }});
        std::fs::write(dir.join("pebble.json"), config.to_string()).expect("write pebble's config");
        let log = std::fs::File::create(dir.join("pebble.log")).expect("pebble log");
        let child = Command::new(program)
            .arg("-config")
            .arg(dir.join("pebble.json"))
            // Validate at once (no simulated delay), and validate every order anew.
            .env("PEBBLE_VA_NOSLEEP", "1")
            .env("PEBBLE_AUTHZREUSE", "0")
            .env_remove("PEBBLE_VA_ALWAYS_VALID")
            .stdout(Stdio::from(log.try_clone().expect("pebble log")))
            .stderr(Stdio::from(log))
            .spawn()
            .expect("running pebble");
        let pebble =
            Self { child, directory_url: format!("https://{HOST}:{}/dir", listen.port()), management, ca_file };
        wait_until_listening(listen).await;
        wait_until_listening(management).await;
        Some(pebble)
    }

    /// The root pebble issues under, from its management interface.
    pub async fn issuing_root(&self, ca: &TestCa) -> CertificateDer<'static> {
        let body = https_get(self.management, ca.der(), "/roots/0").await;
        CertificateDer::from_pem_slice(body.as_bytes()).expect("pebble's root")
    }
}

impl Drop for Pebble {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An HTTPS listener like Ferrozone's: certificates from `resolver`, ALPN `acme-tls/1`
/// offered and such connections closed right after the handshake.
pub struct Listener {
    pub port: u16,
    task: JoinHandle<()>,
}

impl Listener {
    pub async fn bind() -> (TcpListener, u16) {
        // Both address families, whichever `localhost` resolves to first for pebble.
        let listener = match TcpListener::bind("[::]:0").await {
            Ok(listener) => listener,
            Err(_) => TcpListener::bind("127.0.0.1:0").await.expect("bind"),
        };
        let port = listener.local_addr().expect("address").port();
        (listener, port)
    }

    pub fn serve(listener: TcpListener, resolver: Arc<dyn ResolvesServerCert>) -> Self {
        let port = listener.local_addr().expect("address").port();
        let mut config = ServerConfig::builder().with_no_client_auth().with_cert_resolver(resolver);
        config.alpn_protocols = vec![b"http/1.1".to_vec(), ferrozone_acme::ACME_TLS_ALPN.to_vec()];
        let acceptor = TlsAcceptor::from(Arc::new(config));
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    // A failed handshake is the client's to report.
                    if let Ok(mut tls) = acceptor.accept(stream).await {
                        let _ = tls.shutdown().await;
                    }
                });
            }
        });
        Self { port, task }
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The leaf certificate served on `port` to a client that trusts only `roots`, or the
/// handshake's error.
pub async fn served_certificate(
    port: u16,
    roots: &[CertificateDer<'static>],
) -> Result<CertificateDer<'static>, String> {
    let stream = TcpStream::connect(("127.0.0.1", port)).await.map_err(|e| e.to_string())?;
    let tls = connector(roots).connect(server_name(), stream).await.map_err(|e| e.to_string())?;
    let (_, connection) = tls.get_ref();
    let chain = connection.peer_certificates().ok_or("no certificate")?;
    Ok(chain[0].clone().into_owned())
}

fn connector(roots: &[CertificateDer<'static>]) -> TlsConnector {
    let mut store = RootCertStore::empty();
    for root in roots {
        store.add(root.clone()).expect("root");
    }
    TlsConnector::from(Arc::new(ClientConfig::builder().with_root_certificates(store).with_no_client_auth()))
}

fn server_name() -> ServerName<'static> {
    ServerName::try_from(HOST).expect("server name")
}

/// A bare HTTP/1.0 GET over TLS: enough for pebble's management interface.
async fn https_get(address: SocketAddr, root: CertificateDer<'static>, path: &str) -> String {
    let stream = TcpStream::connect(address).await.expect("connect to pebble");
    let mut tls = connector(&[root]).connect(server_name(), stream).await.expect("TLS to pebble");
    let request = format!("GET {path} HTTP/1.0\r\nHost: {HOST}\r\n\r\n");
    tls.write_all(request.as_bytes()).await.expect("request");
    let mut response = String::new();
    // pebble closes without a close_notify; what was read by then is the whole response.
    let _ = tls.read_to_string(&mut response).await;
    let (head, body) = response.split_once("\r\n\r\n").expect("an HTTP response");
    assert!(head.starts_with("HTTP/1.1 200") || head.starts_with("HTTP/1.0 200"), "{head}");
    body.to_owned()
}

async fn free_port() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    listener.local_addr().expect("address")
}

/// Waits for pebble to listen, for at most 30 seconds (a start-up deadline, not a timing
/// assertion).
async fn wait_until_listening(address: SocketAddr) {
    for _ in 0..300 {
        if TcpStream::connect(address).await.is_ok() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("pebble did not listen on {address}");
}
