//! The state a gateway holds, as the data plane's source: the peers whose VPN session has
//! not ended, the egress policy over them; statistics go back to the control plane.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::UNIX_EPOCH;

use async_trait::async_trait;
use ferrozone_domain::egress::EgressPolicy;
use ferrozone_domain::gateway::state::DesiredState;
use ferrozone_domain::Timestamp;
use tokio::sync::watch;

use super::client::{Client, PeerStatsOut};
use crate::{Key, Peer, PeerSource, PeerStats, PolicySource};

/// One version of the state, as held.
#[derive(Debug)]
pub struct Held {
    pub version: String,
    pub state: DesiredState,
}

/// The state held now (replaced whole on each new version), and the client statistics go to.
pub struct RemoteState {
    current: watch::Sender<Arc<Held>>,
    client: Arc<Client>,
}

impl RemoteState {
    pub fn new(held: Held, client: Arc<Client>) -> Self {
        Self { current: watch::Sender::new(Arc::new(held)), client }
    }

    pub fn current(&self) -> Arc<Held> {
        self.current.borrow().clone()
    }

    /// Follows each new version.
    pub fn subscribe(&self) -> watch::Receiver<Arc<Held>> {
        self.current.subscribe()
    }

    pub fn replace(&self, held: Held) {
        self.current.send_replace(Arc::new(held));
    }
}

#[async_trait]
impl PeerSource for RemoteState {
    async fn desired_peers(&self) -> anyhow::Result<Vec<Peer>> {
        Ok(peers_at(&self.current().state, Timestamp::now()))
    }

    async fn record_stats(&self, stats: &[(Key, PeerStats)]) -> anyhow::Result<()> {
        let reports: Vec<PeerStatsOut> = stats.iter().filter_map(|(key, stats)| report(key, stats)).collect();
        if reports.is_empty() {
            return Ok(());
        }
        Ok(self.client.stats(&reports).await?)
    }
}

#[async_trait]
impl PolicySource for RemoteState {
    async fn egress_policy(&self) -> anyhow::Result<EgressPolicy> {
        Ok(self.current().state.egress_policy(Timestamp::now()))
    }
}

/// The peers of `state` whose session has not ended at `now`; a peer whose key does not
/// decode is left out, with a warning (the control plane checks keys: it is not expected).
pub fn peers_at(state: &DesiredState, now: Timestamp) -> Vec<Peer> {
    let decode = |text: &str| Key::from_base64(text);
    state
        .peers
        .iter()
        .filter(|peer| peer.active_at(now))
        .filter_map(|peer| match (decode(&peer.public_key), decode(&peer.preshared_key.0)) {
            (Ok(key), Ok(psk)) => Some(Peer::for_device(key, Some(psk), peer.ipv4, peer.ipv6)),
            _ => {
                tracing::warn!(public_key = %peer.public_key, "a peer whose keys do not decode is left out");
                None
            }
        })
        .collect()
}

/// A peer's statistics as sent; `None` without a handshake.
fn report(key: &Key, stats: &PeerStats) -> Option<PeerStatsOut> {
    let since_epoch = stats.latest_handshake?.duration_since(UNIX_EPOCH).ok()?;
    Some(PeerStatsOut {
        public_key: key.to_base64(),
        latest_handshake_us: i64::try_from(since_epoch.as_micros()).ok()?,
        endpoint: stats.endpoint.as_ref().map(SocketAddr::to_string),
        rx_bytes: stats.rx_bytes,
        tx_bytes: stats.tx_bytes,
    })
}
