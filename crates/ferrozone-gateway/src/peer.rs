//! Peers as the reconciler wants them and as an interface reports them.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::SystemTime;

use ipnet::IpNet;

use crate::key::Key;

/// A peer as it should be on the interface.
#[derive(Clone, PartialEq, Eq)]
pub struct Peer {
    pub public_key: Key,
    /// `None`: no preshared key.
    pub preshared_key: Option<Key>,
    /// The device's `ipv4/32` and `ipv6/128`; kept sorted, so equal sets compare equal.
    pub allowed_ips: Vec<IpNet>,
}

impl Peer {
    /// The peer of a device: its tunnel addresses as `/32` and `/128` allowed IPs.
    pub fn for_device(
        public_key: Key,
        preshared_key: Option<Key>,
        ipv4: Option<Ipv4Addr>,
        ipv6: Option<Ipv6Addr>,
    ) -> Self {
        let hosts = [ipv4.map(IpAddr::V4), ipv6.map(IpAddr::V6)];
        Self::new(public_key, preshared_key, hosts.into_iter().flatten().map(IpNet::from).collect())
    }

    pub fn new(public_key: Key, preshared_key: Option<Key>, mut allowed_ips: Vec<IpNet>) -> Self {
        allowed_ips.sort();
        allowed_ips.dedup();
        Self { public_key, preshared_key: preshared_key.filter(|k| !k.is_zero()), allowed_ips }
    }
}

impl std::fmt::Debug for Peer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Peer")
            .field("public_key", &self.public_key)
            .field("preshared_key", &self.preshared_key.map(|_| "<secret>"))
            .field("allowed_ips", &self.allowed_ips)
            .finish()
    }
}

/// What an interface reports of one peer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObservedPeer {
    pub peer: Peer,
    pub stats: PeerStats,
}

/// Traffic statistics of one peer on one interface.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PeerStats {
    /// `None` until the first handshake.
    pub latest_handshake: Option<SystemTime>,
    /// Where the peer's packets last came from.
    pub endpoint: Option<SocketAddr>,
    pub rx_bytes: u64,
    pub tx_bytes: u64,
}

/// The interface's own settings.
#[derive(Clone)]
pub struct InterfaceConfig {
    pub name: String,
    pub private_key: Key,
    pub listen_port: u16,
    /// The gateway addresses with their network's prefix length, e.g. `10.3.2.1/24`.
    pub addresses: Vec<IpNet>,
}

impl std::fmt::Debug for InterfaceConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InterfaceConfig")
            .field("name", &self.name)
            .field("listen_port", &self.listen_port)
            .field("addresses", &self.addresses)
            .finish_non_exhaustive()
    }
}
