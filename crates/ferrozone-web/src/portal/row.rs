//! A device as a row of the portal's lists (`My devices`, and the device page's summary):
//! every value as the page shows it, in the words of [`crate::format`].

use ferrozone_domain::model::{Device, User};
use ferrozone_domain::Timestamp;

use crate::format::{ago, bytes, day};

/// A device as a row of the portal's lists: every value as the page shows it.
pub struct DeviceRow {
    pub id: String,
    pub name: String,
    pub ipv4: String,
    pub ipv6: String,
    pub online: bool,
    /// The owner is disabled: the device is off the VPN, whatever its last handshake.
    pub owner_disabled: bool,
    /// The last handshake as RFC 3339, if there was one.
    pub handshake_at: String,
    pub handshake: String,
    /// What the device downloaded through the tunnel: what the gateway sent it (WireGuard
    /// counts from the gateway's side, `tx_bytes`).
    pub downloaded: String,
    /// What the device uploaded: what the gateway received from it (`rx_bytes`).
    pub uploaded: String,
    pub remote: String,
    pub created_at: String,
    pub created: String,
}

/// What an absent address or value shows.
pub const NONE: &str = "—";

impl DeviceRow {
    pub fn new(device: &Device, now: Timestamp) -> Self {
        let stats = &device.stats;
        Self {
            id: device.id.to_string(),
            name: device.name.clone(),
            ipv4: device.ipv4.map_or(NONE.to_owned(), |a| a.to_string()),
            ipv6: device.ipv6.map_or(NONE.to_owned(), |a| a.to_string()),
            online: stats.is_online(now),
            owner_disabled: false,
            handshake_at: stats.latest_handshake.map(|t| t.to_string()).unwrap_or_default(),
            handshake: stats.latest_handshake.map_or_else(|| "never".to_owned(), |at| ago(at, now)),
            downloaded: bytes(stats.tx_bytes.unwrap_or(0)),
            uploaded: bytes(stats.rx_bytes.unwrap_or(0)),
            remote: stats.remote_ip.clone().unwrap_or_else(|| NONE.to_owned()),
            created_at: device.inserted_at.to_string(),
            created: day(device.inserted_at),
        }
    }

    /// The row of a device whose owner is `owner`: off the VPN while the owner is disabled.
    pub fn owned_by(self, owner: &User) -> Self {
        let owner_disabled = owner.disabled_at.is_some();
        Self { online: self.online && !owner_disabled, owner_disabled, ..self }
    }
}
