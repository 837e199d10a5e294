//! Starting `ferrozone serve` as a child process and talking to it.

use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

pub const BIN: &str = env!("CARGO_BIN_EXE_ferrozone");

/// A `ferrozone` command with a clean environment: no inherited `FERROZONE_*` settings.
pub fn command(data_dir: &Path, env: &[(&str, &str)]) -> Command {
    let mut cmd = Command::new(BIN);
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("FERROZONE_") {
            cmd.env_remove(name);
        }
    }
    // API-level tests: no WireGuard interface on the test machine (the data plane has its
    // own end-to-end test in network namespaces, scripts/wg-e2e).
    cmd.env("FERROZONE_DATA_DIR", data_dir).env("FERROZONE_WIREGUARD_BACKEND", "none").env("RUST_LOG", "warn");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd
}

pub struct Server {
    pub child: Child,
    pub base: String,
    /// Where the server's standard output goes. A file, not a pipe: `serve` writes the
    /// one-time token before it serves, so once `/healthz` answers the file holds it,
    /// with no reader thread to race.
    stdout: tempfile::NamedTempFile,
    /// Where its log (standard error) goes, when the test reads it.
    log: Option<tempfile::NamedTempFile>,
}

impl Server {
    /// Starts `serve` on a free loopback port and waits until `/healthz` answers.
    pub async fn start(data_dir: &Path, env: &[(&str, &str)]) -> Server {
        Self::start_with_flags(data_dir, env, &[]).await
    }

    /// [`Server::start`], with `flags` after `serve`.
    pub async fn start_with_flags(data_dir: &Path, env: &[(&str, &str)], flags: &[&str]) -> Server {
        Self::spawn(data_dir, env, flags, false).await
    }

    /// [`Server::start`], with its log (at `RUST_LOG=info`) kept for [`Server::log`].
    pub async fn start_logged(data_dir: &Path, env: &[(&str, &str)]) -> Server {
        Self::spawn(data_dir, env, &[], true).await
    }

    async fn spawn(data_dir: &Path, env: &[(&str, &str)], flags: &[&str], logged: bool) -> Server {
        let port = free_port();
        let listen = format!("127.0.0.1:{port}");
        let stdout = tempfile::NamedTempFile::new().expect("a file for the standard output");
        let log = logged.then(|| tempfile::NamedTempFile::new().expect("a file for the log"));
        let mut cmd = command(data_dir, env);
        cmd.arg("serve").args(flags).env("FERROZONE_LISTEN", &listen);
        cmd.stdout(stdout.reopen().expect("the standard output file reopens"));
        match &log {
            Some(file) => cmd.env("RUST_LOG", "info").stderr(file.reopen().expect("the log file reopens")),
            None => cmd.stderr(std::process::Stdio::inherit()),
        };
        let child = cmd.spawn().expect("ferrozone starts");
        let server = Server { child, base: format!("http://{listen}"), stdout, log };
        server.wait_ready().await;
        server
    }

    /// Polls `/healthz` until it answers 200 (readiness, not a timing assertion).
    async fn wait_ready(&self) {
        let deadline = Instant::now() + Duration::from_secs(60);
        let client = reqwest::Client::new();
        while Instant::now() < deadline {
            if let Ok(r) = client.get(format!("{}/healthz", self.base)).send().await {
                if r.status() == 200 {
                    return;
                }
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("ferrozone at {} did not become healthy", self.base);
    }

    /// The one-time admin token printed on the first start, if this start printed one.
    pub fn printed_token(&self) -> Option<String> {
        self.printed().lines().find(|l| l.starts_with("fz_")).map(str::to_owned)
    }

    /// What the server printed on its standard output so far.
    pub fn printed(&self) -> String {
        std::fs::read_to_string(self.stdout.path()).expect("the standard output file reads")
    }

    /// The server's log so far (started with [`Server::start_logged`]).
    pub fn log(&self) -> String {
        let file = self.log.as_ref().expect("the server was started with start_logged");
        std::fs::read_to_string(file.path()).expect("the log file reads")
    }

    /// `kill -9`.
    pub fn kill(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A small API client.
#[derive(Clone)]
pub struct Api {
    pub base: String,
    pub token: String,
    client: reqwest::Client,
}

impl Api {
    pub fn new(base: &str, token: &str) -> Self {
        Self { base: base.to_owned(), token: token.to_owned(), client: reqwest::Client::new() }
    }

    pub async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> reqwest::Result<(u16, Value)> {
        let mut req = self.client.request(method, format!("{}{path}", self.base)).bearer_auth(&self.token);
        if let Some(body) = body {
            req = req.json(&body);
        }
        let res = req.send().await?;
        let status = res.status().as_u16();
        let bytes = res.bytes().await?;
        Ok((status, serde_json::from_slice(&bytes).unwrap_or(Value::Null)))
    }

    pub async fn get(&self, path: &str) -> (u16, Value) {
        self.call(reqwest::Method::GET, path, None).await.unwrap()
    }

    /// Creates a device for `user_id`; `Ok(id)` on 201, `Err(status)` otherwise, or a
    /// transport error while the server dies.
    pub async fn create_device(&self, user_id: &str) -> reqwest::Result<Result<(String, Value), u16>> {
        let key = ferrozone_domain::crypto::generate_keypair().public_key;
        let body = json!({"device": {"user_id": user_id, "public_key": key}});
        let (status, body) = self.call(reqwest::Method::POST, "/v0/devices", Some(body)).await?;
        Ok(if status == 201 {
            Ok((body["data"]["id"].as_str().unwrap().to_owned(), body["data"].clone()))
        } else {
            Err(status)
        })
    }

    /// The first admin's user id.
    pub async fn admin_id(&self) -> String {
        let (status, body) = self.get("/v0/users/admin@localhost").await;
        assert_eq!(status, 200, "{body}");
        body["data"]["id"].as_str().unwrap().to_owned()
    }
}
