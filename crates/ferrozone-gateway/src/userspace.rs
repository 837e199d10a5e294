//! The userspace backend: a `wireguard-go` process, supervised (restarted and set up again
//! if it dies), driven over its UAPI socket.
//!
//! It outlives Ferrozone: started in a process group of its own and writing to a log file
//! rather than a pipe, it keeps the interface, its peers and their sessions (and traffic
//! counters) while `serve` or `ferrozone gateway` restarts, and the next start adopts it
//! through its socket (docs/design/gateways.md, "Restarts drop no tunnel"). It goes when the
//! interface is removed ([`WireGuard::remove`]: `FERROZONE_WIREGUARD_REMOVE_ON_SHUTDOWN`).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context};
use async_trait::async_trait;
use tokio::process::{Child, Command};
use tokio::sync::Notify;

use crate::diff::Changes;
use crate::peer::{InterfaceConfig, ObservedPeer};
use crate::{link, uapi, WireGuard};

/// Where userspace implementations put their UAPI sockets.
const SOCKET_DIR: &str = "/var/run/wireguard";
/// How long a fresh `wireguard-go` may take to open its socket.
const START_TIMEOUT: Duration = Duration::from_secs(10);
/// The pause before restarting a `wireguard-go` that exited.
const RESTART_DELAY: Duration = Duration::from_secs(1);
/// The most peers one wireguard-go interface holds.
pub const MAX_PEERS: usize = 1 << 16;
/// How often an adopted `wireguard-go` (not this process's child) is checked.
const ADOPTED_CHECK: Duration = Duration::from_secs(1);

pub struct Userspace {
    name: String,
    socket: PathBuf,
    /// Incremented by the supervisor on every restart.
    generation: Arc<AtomicU64>,
    /// Set when the interface is removed on purpose: the supervisor stops.
    removing: Arc<AtomicBool>,
}

impl Userspace {
    /// Adopts the `wireguard-go` of an earlier run for the interface of `config` (its peers
    /// and sessions kept), or starts `program` (normally `wireguard-go`), and sets the
    /// interface up. A supervisor then restarts it whenever it exits, sets it up again and
    /// notifies `restarted`, so that the reconciler puts the peers back.
    pub async fn start(program: &str, config: InterfaceConfig, restarted: Arc<Notify>) -> anyhow::Result<Self> {
        let socket = PathBuf::from(SOCKET_DIR).join(format!("{}.sock", config.name));
        let child = if answers(&socket).await {
            adopt(&config, &socket).await?;
            tracing::info!(interface = %config.name, "adopted the running wireguard-go: its peers and sessions are kept");
            None
        } else {
            Some(launch(program, &config, &socket).await?)
        };
        let (generation, removing) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicBool::new(false)));
        let supervisor = Supervisor {
            program: program.to_owned(),
            config: config.clone(),
            socket: socket.clone(),
            generation: generation.clone(),
            removing: removing.clone(),
            restarted,
        };
        tokio::spawn(supervisor.run(child));
        Ok(Self { name: config.name, socket, generation, removing })
    }
}

/// Whether a `wireguard-go` answers on `socket`.
async fn answers(socket: &Path) -> bool {
    uapi::request(socket, "get=1\n\n").await.is_ok()
}

/// Takes over a running `wireguard-go`: its key and port set only where they differ (the
/// same port set again would rebind its sockets, [`uapi::set_interface_changes`]), its
/// addresses and link as on a fresh start.
async fn adopt(config: &InterfaceConfig, socket: &Path) -> anyhow::Result<()> {
    let running = uapi::request(socket, "get=1\n\n").await.context("reading the running interface")?;
    if let Some(set) = uapi::set_interface_changes(config, &running) {
        uapi::request(socket, &set).await.context("setting the interface key and port")?;
    }
    link::configure(&config.name, &config.addresses).await
}

/// The interface's key, port and addresses, and up: on a fresh process.
async fn set_up(config: &InterfaceConfig, socket: &Path) -> anyhow::Result<()> {
    uapi::request(socket, &uapi::set_interface(config)).await.context("setting the interface key and port")?;
    link::configure(&config.name, &config.addresses).await
}

/// Starts the process, waits for its socket and configures the interface. The process gets
/// a process group of its own (a Ctrl-C or a stop signal to Ferrozone's group is not for it)
/// and writes to `<interface>.log` beside its socket, not to a pipe that would break when
/// Ferrozone exits.
async fn launch(program: &str, config: &InterfaceConfig, socket: &Path) -> anyhow::Result<Child> {
    if link::exists(&config.name).await {
        bail!("a network interface named {} exists already; remove it or choose another name", config.name);
    }
    let log_path = socket.with_extension("log");
    let log = open_log(&log_path)?;
    // A socket left by a process that died cannot be connected to; wireguard-go replaces it.
    let mut child = Command::new(program)
        .arg("--foreground")
        .arg(&config.name)
        .env("WG_PROCESS_FOREGROUND", "1")
        .env("LOG_LEVEL", "error")
        .stdin(Stdio::null())
        .stdout(log.try_clone().context("the wireguard-go log")?)
        .stderr(log)
        .process_group(0)
        .kill_on_drop(false)
        .spawn()
        .with_context(|| format!("starting {program}"))?;
    let deadline = tokio::time::Instant::now() + START_TIMEOUT;
    // Readiness poll: the process gives no other signal that its socket is listening.
    while !answers(socket).await {
        if let Some(status) = child.try_wait()? {
            // What it wrote last is why it stopped.
            match last_line(&log_path) {
                Some(line) => bail!("{program} exited during start-up ({status}): {line}"),
                None => bail!("{program} exited during start-up ({status})"),
            }
        }
        if tokio::time::Instant::now() > deadline {
            bail!("{program} did not open {} within {START_TIMEOUT:?}", socket.display());
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    set_up(config, socket).await?;
    tracing::info!(interface = %config.name, port = config.listen_port, log = %log_path.display(), "wireguard-go started");
    Ok(child)
}

/// The log file of a new process, emptied.
fn open_log(path: &Path) -> anyhow::Result<std::fs::File> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    std::fs::OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(true)
        .open(path)
        .with_context(|| format!("opening {}", path.display()))
}

/// The last line of the file at `path` that is not blank.
fn last_line(path: &Path) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    text.lines().rev().map(str::trim).find(|line| !line.is_empty()).map(str::to_owned)
}

struct Supervisor {
    program: String,
    config: InterfaceConfig,
    socket: PathBuf,
    generation: Arc<AtomicU64>,
    removing: Arc<AtomicBool>,
    restarted: Arc<Notify>,
}

impl Supervisor {
    /// Waits for the process to end (its own child: its exit; an adopted one: its socket no
    /// longer answering), then starts another, unless the interface is being removed.
    async fn run(self, mut child: Option<Child>) {
        loop {
            match child.take() {
                Some(mut own) => {
                    let status = own.wait().await;
                    if self.removing.load(Ordering::Acquire) {
                        return;
                    }
                    tracing::error!(interface = %self.config.name, ?status, "wireguard-go exited; restarting it");
                }
                None => {
                    while answers(&self.socket).await {
                        tokio::time::sleep(ADOPTED_CHECK).await;
                    }
                    if self.removing.load(Ordering::Acquire) {
                        return;
                    }
                    tracing::error!(interface = %self.config.name, "the adopted wireguard-go stopped answering; restarting it");
                }
            }
            loop {
                tokio::time::sleep(RESTART_DELAY).await;
                if self.removing.load(Ordering::Acquire) {
                    return;
                }
                match launch(&self.program, &self.config, &self.socket).await {
                    Ok(next) => {
                        child = Some(next);
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

    /// wireguard-go's `MaxPeers` (device/peer.go: 1 << 16): it refuses every peer past it.
    fn max_peers(&self) -> Option<usize> {
        Some(MAX_PEERS)
    }

    /// Deleting the interface ends wireguard-go; the supervisor lets it go.
    async fn remove(&self) -> anyhow::Result<()> {
        self.removing.store(true, Ordering::Release);
        link::ip(&["link", "del", "dev", &self.name]).await?;
        let _ = std::fs::remove_file(self.socket.with_extension("log"));
        Ok(())
    }
}
