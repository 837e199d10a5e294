//! The gateway on another host (`ferrozone gateway`, docs/design/gateways.md): it enrols once
//! for its credential ([`client`]), keeps its credential, a key of its own and its last state
//! in its state directory ([`state_dir`]), feeds the data plane from the state it holds
//! ([`held`]), and keeps that state in line with the control plane by long poll ([`sync`]).
//!
//! Cut off from the control plane, it keeps enforcing the state it holds, across its own
//! restarts (from the state directory), and removes peers whose VPN session ends.

pub mod client;
pub mod held;
pub mod state_dir;
pub mod sync;

pub use client::{Client, PollError};
pub use held::{Held, RemoteState};
pub use state_dir::StateDir;

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use ipnet::IpNet;
use zeroize::Zeroizing;

use crate::gateway::{self, Gateway, Options, Sources, Tasks, Wakes};
use crate::Key;

/// Where the gateway's control plane is and how it is reached.
#[derive(Debug, Clone)]
pub struct RemoteOptions {
    /// The control plane's external URL (`https://vpn.example.com`).
    pub control_plane: String,
    /// The state directory.
    pub state_dir: PathBuf,
    /// The enrolment token, used once when the state directory holds no credential.
    pub enrolment_token: Option<Zeroizing<String>>,
    /// A PEM file of certificates to trust besides the system's (a private CA).
    pub ca_file: Option<PathBuf>,
}

/// Starts a gateway on another host under `tasks`: enrols if it must, takes its saved state
/// or the control plane's, starts the data plane on it (`None` when `options` choose no
/// backend), and keeps polling.
pub async fn start(
    options: &Options,
    remote: &RemoteOptions,
    tasks: &mut dyn Tasks,
) -> anyhow::Result<Option<Gateway>> {
    let dir = StateDir::open(&remote.state_dir)?;
    let http = Client::http(remote.ca_file.as_deref())?;
    let credential = match dir.credential()? {
        Some(credential) => credential,
        None => {
            let token = remote.enrolment_token.as_ref().with_context(|| {
                format!(
                    "{} holds no credential: give the gateway's enrolment token (FERROZONE_GATEWAY_ENROLMENT_TOKEN)",
                    dir.path().display()
                )
            })?;
            let credential = Client::enrol(&http, &remote.control_plane, token).await?;
            dir.save_credential(&credential)?;
            tracing::info!(state_dir = %dir.path().display(), "enrolled: the credential is kept in the state directory");
            credential
        }
    };
    let client = Arc::new(Client::new(http, &remote.control_plane, credential));
    let first = sync::first_state(&client, &dir).await?;
    let sources_of = |held: &Arc<RemoteState>| -> anyhow::Result<Sources> {
        let interface = &held.current().state.interface;
        let addresses = interface
            .addresses
            .iter()
            .map(|a| a.parse::<IpNet>().with_context(|| format!("the interface address `{a}`")))
            .collect::<anyhow::Result<Vec<_>>>()?;
        Ok(Sources {
            private_key: Key::from_base64(&interface.private_key.0).context("the interface's key")?,
            addresses,
            peers: held.clone(),
            policy: held.clone(),
        })
    };
    let held = Arc::new(RemoteState::new(first, client.clone()));
    let wakes = Wakes::default();
    let started = gateway::start(options, sources_of(&held)?, wakes.clone(), tasks).await?;
    tasks.spawn("session expiries", Box::pin(sync::wake_at_expiries(held.subscribe(), wakes.clone())));
    let data_plane = (wakes, started.clone());
    tasks.spawn_draining("control plane", Box::pin(sync::run(client, dir, held, data_plane, tasks.stopping())));
    Ok(started)
}
