//! The userspace backend: a `wireguard-go` child process, supervised (restarted and set up
//! again if it dies), driven over its UAPI socket.

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context};
use async_trait::async_trait;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::Notify;
use tokio::task::JoinHandle;

use crate::diff::Changes;
use crate::peer::{InterfaceConfig, ObservedPeer};
use crate::{link, uapi, WireGuard};

/// Where userspace implementations put their UAPI sockets.
const SOCKET_DIR: &str = "/var/run/wireguard";
/// How long a fresh `wireguard-go` may take to open its socket.
const START_TIMEOUT: Duration = Duration::from_secs(10);
/// The pause before restarting a `wireguard-go` that exited.
const RESTART_DELAY: Duration = Duration::from_secs(1);

pub struct Userspace {
    socket: PathBuf,
    /// Incremented by the supervisor on every restart.
    generation: Arc<AtomicU64>,
}

impl Userspace {
    /// Starts `program` (normally `wireguard-go`) for the interface of `config` and sets the
    /// interface up. A supervisor then restarts it whenever it exits, sets it up again and
    /// notifies `restarted`, so that the reconciler puts the peers back.
    pub async fn start(program: &str, config: InterfaceConfig, restarted: Arc<Notify>) -> anyhow::Result<Self> {
        let socket = PathBuf::from(SOCKET_DIR).join(format!("{}.sock", config.name));
        let child = launch(program, &config, &socket).await?;
        let generation = Arc::new(AtomicU64::new(0));
        let supervisor = Supervisor {
            program: program.to_owned(),
            config,
            socket: socket.clone(),
            generation: generation.clone(),
            restarted,
        };
        tokio::spawn(supervisor.run(child));
        Ok(Self { socket, generation })
    }
}

/// Starts the process, waits for its socket and configures the interface.
async fn launch(program: &str, config: &InterfaceConfig, socket: &std::path::Path) -> anyhow::Result<Child> {
    if link::exists(&config.name).await {
        bail!("a network interface named {} exists already; remove it or choose another name", config.name);
    }
    // A socket left by a process that died cannot be connected to; wireguard-go replaces it.
    let mut child = Command::new(program)
        .arg("--foreground")
        .arg(&config.name)
        .env("WG_PROCESS_FOREGROUND", "1")
        .env("LOG_LEVEL", "error")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("starting {program}"))?;
    let said = forward_output(&mut child, &config.name);
    let deadline = tokio::time::Instant::now() + START_TIMEOUT;
    // Readiness poll: the process gives no other signal that its socket is listening.
    while uapi::request(socket, "get=1\n\n").await.is_err() {
        if let Some(status) = child.try_wait()? {
            // Its output ends with it: what it said last is why it stopped.
            let last = tokio::time::timeout(Duration::from_secs(1), said).await.ok().and_then(|r| r.ok().flatten());
            match last {
                Some(line) => bail!("{program} exited during start-up ({status}): {line}"),
                None => bail!("{program} exited during start-up ({status})"),
            }
        }
        if tokio::time::Instant::now() > deadline {
            bail!("{program} did not open {} within {START_TIMEOUT:?}", socket.display());
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    uapi::request(socket, &uapi::set_interface(config)).await.context("setting the interface key and port")?;
    link::configure(&config.name, &config.addresses).await?;
    tracing::info!(interface = %config.name, port = config.listen_port, "wireguard-go started");
    Ok(child)
}

/// Logs what the child writes (`LOG_LEVEL=error`: its errors only, which it prints on
/// standard output; a Go panic goes to standard error), line by line, until it closes both;
/// the task's result is the last line, which start-up quotes.
fn forward_output(child: &mut Child, interface: &str) -> JoinHandle<Option<String>> {
    let stdout = child.stdout.take().map(|out| BufReader::new(out).lines());
    let stderr = child.stderr.take().map(|err| BufReader::new(err).lines());
    let interface = interface.to_owned();
    tokio::spawn(async move {
        let (mut stdout, mut stderr) = (stdout?, stderr?);
        let (mut out_open, mut err_open) = (true, true);
        let mut last = None;
        while out_open || err_open {
            let line = tokio::select! {
                line = stdout.next_line(), if out_open => match line {
                    Ok(Some(line)) => line,
                    _ => { out_open = false; continue; }
                },
                line = stderr.next_line(), if err_open => match line {
                    Ok(Some(line)) => line,
                    _ => { err_open = false; continue; }
                },
            };
            tracing::warn!(interface = %interface, said = %line, "wireguard-go");
            last = Some(line);
        }
        last
    })
}

struct Supervisor {
    program: String,
    config: InterfaceConfig,
    socket: PathBuf,
    generation: Arc<AtomicU64>,
    restarted: Arc<Notify>,
}

impl Supervisor {
    async fn run(self, mut child: Child) {
        loop {
            let status = child.wait().await;
            tracing::error!(interface = %self.config.name, ?status, "wireguard-go exited; restarting it");
            loop {
                tokio::time::sleep(RESTART_DELAY).await;
                match launch(&self.program, &self.config, &self.socket).await {
                    Ok(next) => {
                        child = next;
                        self.generation.fetch_add(1, Ordering::AcqRel);
                        self.restarted.notify_one();
                        break;
                    }
                    Err(e) => tracing::error!(error = format!("{e:#}"), "restarting wireguard-go failed"),
                }
            }
        }
    }
}

#[async_trait]
impl WireGuard for Userspace {
    fn kind(&self) -> &'static str {
        "userspace"
    }

    async fn peers(&self) -> anyhow::Result<Vec<ObservedPeer>> {
        uapi::parse_peers(&uapi::request(&self.socket, "get=1\n\n").await?)
    }

    async fn apply(&self, changes: &Changes) -> anyhow::Result<()> {
        uapi::request(&self.socket, &uapi::set_peers(changes)).await.map(|_| ())
    }

    fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }
}
