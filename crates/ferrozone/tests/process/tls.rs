//! HTTPS served by the binary: certificate files (and their reload), Strict-Transport-
//! Security, `Secure` cookies, the plain-HTTP redirect listener, and what a bad pair or a
//! plain-HTTP client gets.

use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::{Duration, Instant};

use rcgen::{BasicConstraints, Certificate, CertificateParams, IsCa, Issuer, KeyPair};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::harness::{command, free_port};

const BOUND: Duration = Duration::from_secs(60);

/// A test certificate authority that issues certificates for `localhost`.
struct Pki {
    ca: Certificate,
    issuer: Issuer<'static, KeyPair>,
}

/// An issued certificate: its PEM chain and key, and its own DER (to tell which is served).
struct Issued {
    chain: String,
    key: String,
    der: Vec<u8>,
}

impl Pki {
    fn new() -> Self {
        let ca_key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(rcgen::DnType::CommonName, "Ferrozone test CA");
        let ca = params.self_signed(&ca_key).unwrap();
        Self { ca, issuer: Issuer::new(params, ca_key) }
    }

    fn issue(&self) -> Issued {
        let key = KeyPair::generate().unwrap();
        let params = CertificateParams::new(vec!["localhost".to_owned()]).unwrap();
        let certificate = params.signed_by(&key, &self.issuer).unwrap();
        let chain = format!("{}{}", certificate.pem(), self.ca.pem());
        Issued { chain, key: key.serialize_pem(), der: certificate.der().to_vec() }
    }

    /// A client that trusts this authority alone, reports the peer's certificate and does
    /// not follow redirects.
    fn client(&self) -> reqwest::Client {
        let root = reqwest::Certificate::from_pem(self.ca.pem().as_bytes()).unwrap();
        reqwest::Client::builder()
            .use_rustls_tls()
            .tls_built_in_root_certs(false)
            .add_root_certificate(root)
            .tls_info(true)
            .pool_max_idle_per_host(0)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap()
    }
}

/// The certificate and key files of a test.
struct Files {
    certificate: PathBuf,
    key: PathBuf,
}

impl Files {
    fn write(dir: &Path, issued: &Issued) -> Self {
        let files = Self { certificate: dir.join("tls.crt"), key: dir.join("tls.key") };
        files.replace(issued);
        files
    }

    /// Replaces both files as a deployment tool does: written aside, then renamed over.
    fn replace(&self, issued: &Issued) {
        for (path, text) in [(&self.certificate, &issued.chain), (&self.key, &issued.key)] {
            let aside = path.with_extension("new");
            std::fs::write(&aside, text).unwrap();
            std::fs::rename(&aside, path).unwrap();
        }
    }

    fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("FERROZONE_TLS_CERT_FILE", self.certificate.display().to_string()),
            ("FERROZONE_TLS_KEY_FILE", self.key.display().to_string()),
        ]
    }
}

/// `serve` over HTTPS, killed on drop.
struct Https {
    child: Child,
    port: u16,
    base: String,
    /// Where the server's log (standard error) goes.
    log: tempfile::NamedTempFile,
}

impl Drop for Https {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Https {
    /// Starts `serve` with `env` on a free port, its external URL `https://localhost:<port>`,
    /// and waits until `/healthz` answers over HTTPS.
    async fn start(data_dir: &Path, env: &[(&str, String)], client: &reqwest::Client) -> Self {
        let port = free_port();
        let base = format!("https://localhost:{port}");
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let log = tempfile::NamedTempFile::new().unwrap();
        let child = command(data_dir, &env)
            .arg("serve")
            .env("FERROZONE_LISTEN", format!("127.0.0.1:{port}"))
            .env("FERROZONE_EXTERNAL_URL", &base)
            .env("FERROZONE_TLS_RELOAD_INTERVAL", "1")
            .stdout(std::process::Stdio::null())
            .stderr(log.reopen().unwrap())
            .spawn()
            .unwrap();
        let server = Self { child, port, base, log };
        let deadline = Instant::now() + BOUND;
        while Instant::now() < deadline {
            if client.get(format!("{}/healthz", server.base)).send().await.is_ok_and(|r| r.status() == 200) {
                return server;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("ferrozone at {} did not answer over HTTPS", server.base);
    }

    /// Waits until the server's log holds `text`.
    async fn logged(&self, text: &str) {
        let deadline = Instant::now() + BOUND;
        while !std::fs::read_to_string(self.log.path()).unwrap().contains(text) {
            assert!(Instant::now() < deadline, "the server did not log {text:?}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The DER of the certificate a new client is served (a client of its own: a resumed
    /// TLS session would report the certificate of the session's first handshake).
    async fn served_certificate(&self, pki: &Pki) -> Vec<u8> {
        let response = pki.client().get(format!("{}/healthz", self.base)).send().await.unwrap();
        let info = response.extensions().get::<reqwest::tls::TlsInfo>().expect("TLS info");
        info.peer_certificate().expect("a peer certificate").to_vec()
    }
}

#[tokio::test]
async fn https_serves_the_files_with_hsts_and_secure_host_cookies() {
    let dir = tempfile::tempdir().unwrap();
    let pki = Pki::new();
    let issued = pki.issue();
    let files = Files::write(dir.path(), &issued);
    let client = pki.client();
    let server = Https::start(&dir.path().join("data"), &files.env(), &client).await;

    let health = client.get(format!("{}/healthz", server.base)).send().await.unwrap();
    assert_eq!(health.status(), 200);
    assert_eq!(health.headers()["strict-transport-security"], "max-age=63072000");
    assert_eq!(server.served_certificate(&pki).await, issued.der);

    let page = client.get(format!("{}/sign_in", server.base)).send().await.unwrap();
    assert_eq!(page.status(), 200);
    assert!(page.headers().contains_key("strict-transport-security"));
    let cookies: Vec<&str> = page.headers().get_all("set-cookie").iter().map(|v| v.to_str().unwrap()).collect();
    assert!(
        cookies.iter().any(|c| c.starts_with("__Host-ferrozone_sign_in=") && c.contains("; Secure")),
        "{cookies:?}"
    );
}

#[tokio::test]
async fn new_certificate_files_are_served_without_a_restart_and_a_bad_pair_is_not() {
    let dir = tempfile::tempdir().unwrap();
    let pki = Pki::new();
    let first = pki.issue();
    let files = Files::write(dir.path(), &first);
    let client = pki.client();
    let server = Https::start(&dir.path().join("data"), &files.env(), &client).await;
    assert_eq!(server.served_certificate(&pki).await, first.der);

    // A mismatched pair is logged, and the first certificate is still served.
    let (second, third) = (pki.issue(), pki.issue());
    files.replace(&Issued { chain: second.chain.clone(), key: third.key.clone(), der: Vec::new() });
    server.logged("is not the key of the certificate").await;
    assert_eq!(server.served_certificate(&pki).await, first.der);

    files.replace(&second);
    let deadline = Instant::now() + BOUND;
    loop {
        let served = server.served_certificate(&pki).await;
        if served == second.der {
            break;
        }
        assert_eq!(served, first.der, "neither the old certificate nor the new one");
        assert!(Instant::now() < deadline, "the new certificate was not served in time");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn plain_http_to_the_https_port_gets_no_http_answer_and_the_server_carries_on() {
    let dir = tempfile::tempdir().unwrap();
    let pki = Pki::new();
    let files = Files::write(dir.path(), &pki.issue());
    let client = pki.client();
    let mut server = Https::start(&dir.path().join("data"), &files.env(), &client).await;

    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", server.port)).await.unwrap();
    stream.write_all(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n").await.unwrap();
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(BOUND, stream.read_to_end(&mut answer)).await.expect("the connection is closed");
    assert!(!answer.starts_with(b"HTTP/"), "{}", String::from_utf8_lossy(&answer));

    assert!(server.child.try_wait().unwrap().is_none(), "the server exited");
    let health = client.get(format!("{}/healthz", server.base)).send().await.unwrap();
    assert_eq!(health.status(), 200);
}

#[tokio::test]
async fn status_reads_the_health_report_of_a_server_that_serves_https() {
    let dir = tempfile::tempdir().unwrap();
    let pki = Pki::new();
    let files = Files::write(dir.path(), &pki.issue());
    let data = dir.path().join("data");
    let server = Https::start(&data, &files.env(), &pki.client()).await;

    let mut env = files.env();
    env.push(("FERROZONE_LISTEN", format!("127.0.0.1:{}", server.port)));
    env.push(("FERROZONE_EXTERNAL_URL", server.base.clone()));
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let out = command(&data, &env).arg("status").stdin(std::process::Stdio::null()).output().unwrap();
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(shown.contains("status: ok") && shown.contains("data plane: backend none"), "{shown}");
}

#[tokio::test]
async fn the_redirect_listener_sends_plain_http_to_the_external_url() {
    let dir = tempfile::tempdir().unwrap();
    let pki = Pki::new();
    let files = Files::write(dir.path(), &pki.issue());
    let client = pki.client();
    let redirect_port = free_port();
    let mut env = files.env();
    env.push(("FERROZONE_HTTP_REDIRECT_LISTEN", format!("127.0.0.1:{redirect_port}")));
    let server = Https::start(&dir.path().join("data"), &env, &client).await;

    let url = format!("http://127.0.0.1:{redirect_port}/sign_in?return_to=%2Fdevices");
    let response = client.post(url).header("host", "evil.example").send().await.unwrap();
    assert_eq!(response.status(), 308);
    let expected = format!("https://localhost:{}/sign_in?return_to=%2Fdevices", server.port);
    assert_eq!(response.headers()["location"], expected.as_str());
    assert!(!response.headers().contains_key("strict-transport-security"));
}

/// What `serve` says when it refuses to start with `env`.
fn refusal(env: &[(&str, String)]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let port = free_port().to_string();
    let output = command(dir.path(), &env).arg("serve").env("FERROZONE_LISTEN", format!("127.0.0.1:{port}")).output();
    let output = output.unwrap();
    assert!(!output.status.success(), "serve started");
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn a_bad_pair_is_refused_at_start_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let pki = Pki::new();
    let (one, other) = (pki.issue(), pki.issue());
    let files = Files::write(dir.path(), &Issued { chain: one.chain, key: other.key, der: Vec::new() });
    let said = refusal(&files.env());
    assert!(said.contains("is not the key of the certificate"), "{said}");
    assert!(said.contains(&files.key.display().to_string()), "{said}");

    std::fs::write(&files.key, "not a key\n").unwrap();
    let said = refusal(&files.env());
    assert!(said.contains(&format!("{} holds no PEM private key", files.key.display())), "{said}");

    let missing = dir.path().join("missing.crt");
    let mut env = files.env();
    env[0].1 = missing.display().to_string();
    let said = refusal(&env);
    assert!(said.contains(&format!("reading {}", missing.display())), "{said}");

    let said = refusal(&env[..1]);
    assert!(said.contains("FERROZONE_TLS_CERT_FILE and FERROZONE_TLS_KEY_FILE must be set together"), "{said}");
}
