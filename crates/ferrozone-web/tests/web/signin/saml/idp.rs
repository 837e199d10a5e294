//! The test IdP (`tests/idp/saml`, a real SAML IdP on samlp that signs assertions), Ferrozone
//! served on a real port, and a browser (a cookie jar that follows redirects) that submits
//! the HTML forms it is given.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};

use ferrozone_domain::providers::Providers;
use ferrozone_http::{AppState, SamlSp, WebSettings};
use serde_json::Value;

use crate::helpers::TestApp;

/// Ferrozone's SP entity id in these tests.
pub const SP_ENTITY_ID: &str = "urn:ferrozone:test-sp";

fn idp_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/idp/saml")
}

pub fn key_file(name: &str) -> String {
    std::fs::read_to_string(idp_dir().join("keys").join(name)).unwrap()
}

/// How to get the programs the IdP needs.
const NODE: &str = "apt-get install nodejs npm";

fn installed() -> bool {
    idp_dir().join("node_modules/samlp/package.json").exists()
}

/// Installs the IdP's npm packages (from its lockfile) unless they are there.
fn ensure_installed() {
    static INSTALL: Mutex<()> = Mutex::new(());
    let _guard = INSTALL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = idp_dir();
    if installed() {
        return;
    }
    let status = Command::new("npm")
        .args(["ci", "--no-audit", "--no-fund"])
        .current_dir(&dir)
        .status()
        .unwrap_or_else(|e| panic!("the SAML test IdP needs node and npm (apt-get install nodejs npm): {e}"));
    assert!(status.success(), "npm ci in {} failed", dir.display());
}

/// A running test IdP; it stops when dropped.
pub struct Idp {
    child: Child,
    pub base: String,
}

impl Idp {
    /// Starts the IdP with `config` (see `tests/idp/saml/idp.js`); `None` when Node.js is
    /// missing and the test is skipped (tests/support/programs.rs).
    pub fn start(config: Value) -> Option<Self> {
        let node = crate::programs::find("node", NODE)?;
        if !installed() {
            crate::programs::find("npm", NODE)?;
        }
        ensure_installed();
        let mut child = Command::new(node)
            .arg("idp.js")
            .arg(config.to_string())
            .current_dir(idp_dir())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("the SAML test IdP needs node (apt-get install nodejs): {e}"));
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let base = line.trim().strip_prefix("listening ").unwrap_or_else(|| panic!("the IdP said {line:?}"));
        Some(Self { base: base.to_owned(), child })
    }

    pub async fn metadata(&self) -> String {
        let res = reqwest::get(format!("{}/metadata", self.base)).await.unwrap();
        assert!(res.status().is_success());
        res.text().await.unwrap()
    }
}

impl Drop for Idp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Ferrozone on a real port, with the SAML provider `provider` (its `metadata` filled in
/// from `idp`) and, when `sign`, the SP key pair. Returns the base URL.
pub async fn serve(app: &TestApp, idp: &Idp, mut provider: Value, sign: bool) -> String {
    provider["metadata"] = Value::String(idp.metadata().await);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let list = Value::Array(vec![provider]).to_string();
    let providers = Providers::parse(None, "O", Some(&list), "S").unwrap();
    let (key, certificate) = (key_file("sp.key"), key_file("sp.crt"));
    let pair = sign.then_some((key.as_str(), certificate.as_str()));
    let saml = SamlSp::new(SP_ENTITY_ID, pair, &providers.saml).unwrap();
    let web = WebSettings { external_url: base.clone(), secure_cookies: false, providers, saml: Arc::new(saml) };
    let router = crate::helpers::app(AppState::with_web(app.domain.clone(), web));
    let service = router.into_make_service_with_connect_info::<SocketAddr>();
    tokio::spawn(async move { axum::serve(listener, service).await });
    base
}

/// Ferrozone on a real port with no SAML provider at start (the SP entity id of these
/// tests, no key pair): providers come from `/v0/configuration`. Returns the base URL.
pub async fn serve_without_providers(app: &TestApp) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let saml = SamlSp::new(SP_ENTITY_ID, None, &[]).unwrap();
    let web = WebSettings {
        external_url: base.clone(),
        secure_cookies: false,
        providers: Providers::default(),
        saml: Arc::new(saml),
    };
    let router = crate::helpers::app(AppState::with_web(app.domain.clone(), web));
    let service = router.into_make_service_with_connect_info::<SocketAddr>();
    tokio::spawn(async move { axum::serve(listener, service).await });
    base
}

/// A browser: keeps cookies, follows redirects.
pub fn browser() -> reqwest::Client {
    reqwest::Client::builder().cookie_store(true).build().unwrap()
}

/// An HTML form: where it posts, and its fields.
#[derive(Debug, Clone)]
pub struct Form {
    pub action: String,
    pub fields: Vec<(String, String)>,
}

impl Form {
    /// The first form of `html`, its action resolved against `url`.
    pub fn parse(html: &str, url: &reqwest::Url) -> Self {
        let start = html.find("<form").unwrap_or_else(|| panic!("no form in {html}"));
        let tag = &html[start..start + html[start..].find('>').unwrap()];
        let action = url.join(&attribute(tag, "action").unwrap_or_default()).unwrap().to_string();
        let mut fields = Vec::new();
        let mut rest = &html[start..];
        while let Some(at) = rest.find("<input") {
            let end = at + rest[at..].find('>').unwrap();
            let tag = &rest[at..end];
            if let Some(name) = attribute(tag, "name") {
                fields.push((name, attribute(tag, "value").unwrap_or_default()));
            }
            rest = &rest[end..];
        }
        Self { action, fields }
    }

    pub fn get(&self, name: &str) -> &str {
        self.fields.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str()).unwrap_or_else(|| panic!("no {name}"))
    }

    pub fn set(&mut self, name: &str, value: &str) {
        match self.fields.iter_mut().find(|(n, _)| n == name) {
            Some(field) => field.1 = value.to_owned(),
            None => self.fields.push((name.to_owned(), value.to_owned())),
        }
    }

    /// Submits the form (a POST), following redirects.
    pub async fn submit(&self, browser: &reqwest::Client) -> reqwest::Response {
        browser.post(&self.action).form(&self.fields).send().await.unwrap()
    }
}

/// The value of `name="…"` in a tag, entities decoded.
fn attribute(tag: &str, name: &str) -> Option<String> {
    let mut rest = tag;
    loop {
        let at = rest.find(name)?;
        let before = rest[..at].chars().last();
        let after = rest[at + name.len()..].trim_start();
        if before.is_some_and(char::is_whitespace) && after.starts_with('=') {
            let value = after[1..].trim_start();
            let quote = value.chars().next()?;
            let value = &value[1..];
            let end = value.find(quote)?;
            let raw = &value[..end];
            return Some(
                raw.replace("&quot;", "\"")
                    .replace("&#34;", "\"")
                    .replace("&#39;", "'")
                    .replace("&#x27;", "'")
                    .replace("&lt;", "<")
                    .replace("&gt;", ">")
                    .replace("&#60;", "<")
                    .replace("&#62;", ">")
                    .replace("&amp;", "&")
                    .replace("&#38;", "&"),
            );
        }
        rest = &rest[at + name.len()..];
    }
}

/// Whether xml-crypto (the test IdP's signature library) finds `xml`'s enveloped signature
/// valid for the certificate `keys/{cert}`.
pub fn xml_crypto_verifies(xml: &str, cert: &str) -> bool {
    use std::io::Write as _;
    ensure_installed();
    let mut child = Command::new("node")
        .arg("verify.js")
        .arg(format!("keys/{cert}"))
        .current_dir(idp_dir())
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(xml.as_bytes()).unwrap();
    child.wait().unwrap().success()
}
