//! The kernel backend: the Linux WireGuard module, driven over generic netlink
//! (`wireguard-uapi`, whose messages are split to the kernel's size limit, so one apply of
//! any size is one logical batch). The netlink calls block; they run on blocking threads.

use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::UNIX_EPOCH;

use anyhow::{anyhow, Context};
use async_trait::async_trait;
use ipnet::IpNet;
use wireguard_uapi::set::{AllowedIp, Device, Peer as SetPeer, WgPeerF};
use wireguard_uapi::{DeviceInterface, RouteSocket, WgSocket};

use crate::diff::Changes;
use crate::key::Key;
use crate::peer::{InterfaceConfig, ObservedPeer, Peer, PeerStats};
use crate::{link, WireGuard};

pub struct Kernel {
    name: String,
    socket: Arc<Mutex<WgSocket>>,
}

impl Kernel {
    /// Creates the interface (or takes over the one of an earlier run: kernel interfaces
    /// outlive their process), sets its key and port, its addresses, and brings it up.
    /// Fails where the module is missing, which `auto` takes as "try userspace".
    pub async fn start(config: InterfaceConfig) -> anyhow::Result<Self> {
        let name = config.name.clone();
        let (socket, config) = blocking(move || {
            if !RouteSocket::connect()?.list_device_names()?.contains(&config.name) {
                RouteSocket::connect()?
                    .add_device(&config.name)
                    .context("creating a WireGuard interface (is the wireguard module available?)")?;
            }
            let mut socket = WgSocket::connect().context("connecting to WireGuard over netlink")?;
            let device = Device::from_ifname(config.name.as_str())
                .private_key(&config.private_key.0)
                .listen_port(config.listen_port);
            socket.set_device(device).context("setting the interface key and port")?;
            Ok((socket, config))
        })
        .await?;
        link::configure(&name, &config.addresses).await?;
        tracing::info!(interface = %name, port = config.listen_port, "kernel WireGuard interface ready");
        Ok(Self { name, socket: Arc::new(Mutex::new(socket)) })
    }
}

async fn blocking<T: Send + 'static>(work: impl FnOnce() -> anyhow::Result<T> + Send + 'static) -> anyhow::Result<T> {
    tokio::task::spawn_blocking(work).await.map_err(|e| anyhow!("a netlink task failed: {e}"))?
}

#[async_trait]
impl WireGuard for Kernel {
    fn kind(&self) -> &'static str {
        "kernel"
    }

    async fn peers(&self) -> anyhow::Result<Vec<ObservedPeer>> {
        let (socket, name) = (self.socket.clone(), self.name.clone());
        blocking(move || {
            let mut socket = socket.lock().map_err(|_| anyhow!("the netlink socket lock is poisoned"))?;
            let device = socket.get_device(DeviceInterface::from_name(name)).context("reading the interface")?;
            Ok(device.peers.into_iter().map(observed).collect())
        })
        .await
    }

    async fn apply(&self, changes: &Changes) -> anyhow::Result<()> {
        let (socket, name, changes) = (self.socket.clone(), self.name.clone(), changes.clone());
        blocking(move || {
            let zero = [0u8; 32];
            let ips: Vec<Vec<IpAddr>> =
                changes.upsert.iter().map(|p| p.allowed_ips.iter().map(IpNet::addr).collect()).collect();
            let mut peers: Vec<SetPeer<'_>> = changes
                .remove
                .iter()
                .map(|key| SetPeer::from_public_key(&key.0).flags(vec![WgPeerF::RemoveMe]))
                .collect();
            for (peer, addrs) in changes.upsert.iter().zip(&ips) {
                let allowed = peer
                    .allowed_ips
                    .iter()
                    .zip(addrs)
                    .map(|(net, addr)| AllowedIp { ipaddr: addr, cidr_mask: Some(net.prefix_len()) })
                    .collect();
                let psk = peer.preshared_key.as_ref().map_or(&zero, |k| &k.0);
                peers.push(
                    SetPeer::from_public_key(&peer.public_key.0)
                        .flags(vec![WgPeerF::ReplaceAllowedIps])
                        .preshared_key(psk)
                        .allowed_ips(allowed),
                );
            }
            let mut socket = socket.lock().map_err(|_| anyhow!("the netlink socket lock is poisoned"))?;
            socket.set_device(Device::from_ifname(name.as_str()).peers(peers)).context("applying peers")?;
            Ok(())
        })
        .await
    }

    async fn remove(&self) -> anyhow::Result<()> {
        link::ip(&["link", "del", "dev", &self.name]).await
    }
}

fn observed(peer: wireguard_uapi::get::Peer) -> ObservedPeer {
    let allowed_ips = peer.allowed_ips.iter().filter_map(|ip| IpNet::new(ip.ipaddr, ip.cidr_mask).ok()).collect();
    let handshake = (!peer.last_handshake_time.is_zero()).then(|| UNIX_EPOCH + peer.last_handshake_time);
    ObservedPeer {
        peer: Peer::new(Key(peer.public_key), Some(Key(peer.preshared_key)), allowed_ips),
        stats: PeerStats {
            latest_handshake: handshake,
            endpoint: peer.endpoint,
            rx_bytes: peer.rx_bytes,
            tx_bytes: peer.tx_bytes,
        },
    }
}
