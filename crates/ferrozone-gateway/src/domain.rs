//! The domain as the data plane's [`PeerSource`]: the one adapter `ferrozone serve` runs
//! and the data-plane benchmark measures.
//!
//! It lives here, above the domain like the HTTP layer, rather than in the binary, so that
//! the benchmark and the in-process tests drive the same code as the server. The domain
//! does not depend on this crate, so there is no cycle.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::UNIX_EPOCH;

use anyhow::Context;
use async_trait::async_trait;
use ferrozone_domain::model::StatsReport;
use ferrozone_domain::{Domain, Timestamp};
use zeroize::Zeroizing;

use crate::{Key, Peer, PeerSource, PeerStats, PolicySource};

/// The domain as the data plane's source of peers and sink of statistics. Decrypted
/// preshared keys are kept from one pass to the next, keyed by their sealed bytes (which
/// change whenever a key does), so a pass decrypts only new or re-keyed devices.
pub struct DomainPeers {
    domain: Arc<Domain>,
    keys: Mutex<HashMap<Vec<u8>, Key>>,
}

impl DomainPeers {
    pub fn new(domain: Arc<Domain>) -> Self {
        Self { domain, keys: Mutex::default() }
    }
}

#[async_trait]
impl PeerSource for DomainPeers {
    async fn desired_peers(&self) -> anyhow::Result<Vec<Peer>> {
        let active = self.domain.active_peers().await?;
        let mut known = std::mem::take(&mut *self.keys.lock().unwrap_or_else(PoisonError::into_inner));
        let mut keys = HashMap::with_capacity(active.len());
        let mut peers = Vec::with_capacity(active.len());
        for peer in active {
            let psk = match known.remove(&peer.preshared_key.0) {
                Some(psk) => psk,
                None => Key::from_base64(&Zeroizing::new(self.domain.reveal(&peer.preshared_key)?))?,
            };
            let key = Key::from_base64(&peer.public_key).with_context(|| format!("device key {}", peer.public_key))?;
            peers.push(Peer::for_device(key, Some(psk), peer.ipv4, peer.ipv6));
            keys.insert(peer.preshared_key.0, psk);
        }
        *self.keys.lock().unwrap_or_else(PoisonError::into_inner) = keys;
        Ok(peers)
    }

    async fn record_stats(&self, stats: &[(Key, PeerStats)]) -> anyhow::Result<()> {
        let reports: Vec<StatsReport> = stats.iter().filter_map(|(key, stats)| report(key, stats)).collect();
        Ok(self.domain.record_stats(reports).await?)
    }
}

#[async_trait]
impl PolicySource for Domain {
    async fn egress_policy(&self) -> anyhow::Result<ferrozone_domain::egress::EgressPolicy> {
        Ok(Domain::egress_policy(self).await?)
    }

    async fn egress_rules(&self) -> anyhow::Result<Option<ferrozone_domain::egress::EgressRules>> {
        Ok(Some(Domain::egress_rules(self).await?))
    }
}

/// A device's figures as stored; `None` without a handshake.
fn report(key: &Key, stats: &PeerStats) -> Option<StatsReport> {
    let since_epoch = stats.latest_handshake?.duration_since(UNIX_EPOCH).ok()?;
    Some(StatsReport {
        public_key: key.to_base64(),
        latest_handshake: Timestamp::from_micros(i64::try_from(since_epoch.as_micros()).ok()?),
        remote_ip: stats.endpoint.as_ref().map(SocketAddr::ip).map(|ip| ip.to_canonical().to_string()),
        rx_bytes: i64::try_from(stats.rx_bytes).unwrap_or(i64::MAX),
        tx_bytes: i64::try_from(stats.tx_bytes).unwrap_or(i64::MAX),
    })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_peer_without_a_handshake_is_not_reported() {
        let stats = PeerStats { rx_bytes: 5, ..PeerStats::default() };
        assert_eq!(report(&Key([1; 32]), &stats), None);
    }

    #[test]
    fn a_report_has_the_handshake_and_the_address_without_port() {
        let stats = PeerStats {
            latest_handshake: Some(UNIX_EPOCH + Duration::from_micros(1_700_000_000_000_001)),
            endpoint: Some("[::ffff:192.0.2.7]:51820".parse().unwrap()),
            rx_bytes: u64::MAX,
            tx_bytes: 30,
        };
        let report = report(&Key([1; 32]), &stats).unwrap();
        assert_eq!(report.latest_handshake, Timestamp::from_micros(1_700_000_000_000_001));
        assert_eq!(report.remote_ip.as_deref(), Some("192.0.2.7"), "a mapped IPv4 address is shown as IPv4");
        assert_eq!((report.rx_bytes, report.tx_bytes), (i64::MAX, 30));
    }
}
