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
    /// Paused: off the VPN until resumed, whatever its last handshake.
    pub paused: bool,
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
            online: stats.is_online(now) && device.paused_at.is_none(),
            owner_disabled: false,
            paused: device.paused_at.is_some(),
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

/// What is going on with a device, in a sentence (its page's Diagnosis; docs/web.md): off the VPN (paused, owner disabled),
/// never connected, connected, or a handshake gone stale (WireGuard renews it every two
/// minutes while the tunnel carries traffic, so one older than three means the tunnel is
/// down or idle).
pub fn diagnosis(device: &Device, owner_disabled: bool, now: Timestamp) -> String {
    let stats = &device.stats;
    if device.paused_at.is_some() {
        return "Paused: off the VPN until it is resumed; its keys and address are kept.".to_owned();
    }
    if owner_disabled {
        return "Off the VPN: its owner is disabled.".to_owned();
    }
    match stats.latest_handshake {
        None => "Never connected: no handshake yet. Import the configuration on the device and turn the tunnel on."
            .to_owned(),
        Some(at) if stats.is_online(now) => format!("Connected: last handshake {}.", ago(at, now)),
        Some(at) => format!(
            "Handshake stale: the last was {}. The tunnel is off, idle without keepalive, or cannot reach the server.",
            ago(at, now)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrozone_domain::crypto::Sealed;
    use ferrozone_domain::model::{CustomConfig, PeerStats, UseDefaults};
    use uuid::Uuid;

    fn device(handshake_secs_ago: Option<i64>, paused: bool, now: Timestamp) -> Device {
        Device {
            id: Uuid::now_v7(),
            user_id: Uuid::now_v7(),
            name: "laptop".into(),
            description: None,
            public_key: "key".into(),
            preshared_key: Sealed(Vec::new()),
            ipv4: None,
            ipv6: None,
            use_default: UseDefaults::default(),
            custom: CustomConfig::default(),
            stats: PeerStats {
                latest_handshake: handshake_secs_ago.map(|s| now.plus_secs(-s)),
                ..PeerStats::default()
            },
            paused_at: paused.then_some(now),
            inserted_at: now,
            updated_at: now,
        }
    }

    #[test]
    fn the_diagnosis_says_what_keeps_a_device_off_or_on() {
        let now = Timestamp::now();
        let said = |handshake, paused, owner_disabled| diagnosis(&device(handshake, paused, now), owner_disabled, now);
        assert!(said(None, false, false).starts_with("Never connected"));
        assert!(said(Some(30), false, false).starts_with("Connected: last handshake"));
        assert!(
            said(Some(3600), false, false).starts_with("Handshake stale: the last was 1 hour ago"),
            "{}",
            said(Some(3600), false, false)
        );
        assert!(said(Some(30), false, true).starts_with("Off the VPN: its owner is disabled"));
        assert!(said(Some(30), true, true).starts_with("Paused"), "paused says so before the owner");
    }
}
