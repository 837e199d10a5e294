//! The test OpenID Connect provider (`tests/idp/oidc/idp.mjs`, on oidc-provider), started
//! by each test on a free port of its own, and its controls.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// A client registered at the provider.
pub struct IdpClient {
    pub client_id: String,
    pub client_secret: String,
    pub redirect_uris: Vec<String>,
}

/// A running provider; stopped when dropped.
pub struct Idp {
    pub issuer: String,
    child: Option<Child>,
    control: reqwest::Client,
    _config: tempfile::NamedTempFile,
}

fn directory() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/idp/oidc")
}

fn installed() -> bool {
    directory().join("node_modules/oidc-provider/package.json").exists()
}

/// How to get the programs the provider needs.
const NODE: &str = "apt-get install nodejs npm";

/// `npm ci` in the provider's directory unless its `node_modules` is there: once per
/// test binary, whichever test gets here first.
async fn install() {
    static INSTALLED: tokio::sync::OnceCell<()> = tokio::sync::OnceCell::const_new();
    INSTALLED
        .get_or_init(|| async {
            let dir = directory();
            if installed() {
                return;
            }
            let status = Command::new("npm")
                .args(["ci", "--no-audit", "--no-fund"])
                .current_dir(&dir)
                .status()
                .await
                .unwrap_or_else(|e| panic!("the OIDC test provider needs npm (from nodejs; .ci/run installs it): {e}"));
            assert!(status.success(), "npm ci in {} failed", dir.display());
        })
        .await;
}

impl Idp {
    /// Starts a provider with these clients. `email_in_id_token`: ID tokens carry `email`
    /// themselves; otherwise only the userinfo endpoint has it (oidc-provider's default).
    /// `None` when Node.js is missing and the test is skipped (tests/support/programs.rs).
    pub async fn start(clients: &[IdpClient], email_in_id_token: bool) -> Option<Self> {
        let node = crate::programs::find("node", NODE)?;
        if !installed() {
            crate::programs::find("npm", NODE)?;
        }
        install().await;
        // A few providers start at a time: the suite runs many tests at once on few cores,
        // and each start is a second of CPU.
        static STARTING: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(2);
        let _turn = STARTING.acquire().await.unwrap();
        let clients: Vec<_> = clients
            .iter()
            .map(|c| {
                serde_json::json!({
                    "client_id": c.client_id, "client_secret": c.client_secret, "redirect_uris": c.redirect_uris,
                })
            })
            .collect();
        let config = serde_json::json!({"clients": clients, "email_in_id_token": email_in_id_token});
        let file = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(file.path(), config.to_string()).unwrap();
        let mut child = Command::new(node)
            .arg("idp.mjs")
            .arg(file.path())
            .current_dir(directory())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("the OIDC test provider needs node (nodejs; .ci/run installs it): {e}"));
        // Its warnings reach the test's output, except the one that Node.js 20 is not the
        // release it recommends (it works on it).
        let mut errors = BufReader::new(child.stderr.take().unwrap()).lines();
        tokio::spawn(async move {
            while let Ok(Some(line)) = errors.next_line().await {
                if !line.contains("Unsupported runtime") {
                    eprintln!("oidc test provider: {line}");
                }
            }
        });
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let issuer = tokio::time::timeout(Duration::from_secs(120), async {
            while let Some(line) = lines.next_line().await.unwrap() {
                if let Some(issuer) = line.strip_prefix("listening ") {
                    return issuer.to_owned();
                }
            }
            panic!("the OIDC test provider exited before listening");
        })
        .await
        .expect("the OIDC test provider starts within 120 s");
        // Keep reading its output, so that it never blocks on a full pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Some(Self { issuer, child: Some(child), control: reqwest::Client::new(), _config: file })
    }

    pub fn discovery_uri(&self) -> String {
        format!("{}/.well-known/openid-configuration", self.issuer)
    }

    async fn control(&self, path: &str) {
        let res = self.control.post(format!("{}{path}", self.issuer)).send().await.unwrap();
        assert!(res.status().is_success(), "{path}: {}", res.status());
    }

    /// Revokes every grant and token of the account `email`.
    pub async fn revoke(&self, email: &str) {
        let query = form_urlencoded::Serializer::new(String::new()).append_pair("account", email).finish();
        self.control(&format!("/admin/revoke?{query}")).await;
    }

    /// Every protocol endpoint answers 503 (`true`) or works again.
    pub async fn outage(&self, on: bool) {
        self.control(&format!("/admin/outage?on={}", u8::from(on))).await;
    }

    /// The token endpoint answers the OAuth error `code` with `status` from now on; `None`:
    /// it works again.
    pub async fn token_error(&self, error: Option<(&str, u16)>) {
        match error {
            Some((code, status)) => self.control(&format!("/admin/token-error?code={code}&status={status}")).await,
            None => self.control("/admin/token-error").await,
        }
    }

    /// The `groups` claim of the account `email` from now on.
    pub async fn set_groups(&self, email: &str, groups: &[&str]) {
        let query = form_urlencoded::Serializer::new(String::new())
            .append_pair("account", email)
            .append_pair("groups", &groups.join(","))
            .finish();
        self.control(&format!("/admin/groups?{query}")).await;
    }

    /// Alters the next ID token the token endpoint gives: `audience`, `nonce`, `signature`.
    pub async fn tamper(&self, mode: &str) {
        self.control(&format!("/admin/tamper?mode={mode}")).await;
    }

    /// Stops the provider: its port then refuses connections.
    pub async fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            child.kill().await.unwrap();
        }
    }
}
