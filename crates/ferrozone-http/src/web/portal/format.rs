//! How the portal's pages show a device's figures: relative times, byte counts, online or
//! not. `assets/devices.js` computes the same words in the browser, so a row looks the
//! same whether the server or the live update wrote it: change both together.

use ferrozone_domain::model::Device;
use ferrozone_domain::Timestamp;

/// A device counts as online while its last handshake is this recent: WireGuard renews a
/// session every 2 minutes while traffic flows, so a live peer is never quiet longer.
pub const ONLINE_SECS: i64 = 180;

/// Whether a handshake at `handshake` means online at `now`.
pub fn online(handshake: Option<Timestamp>, now: Timestamp) -> bool {
    handshake.is_some_and(|at| now.micros().saturating_sub(at.micros()) <= ONLINE_SECS * 1_000_000)
}

/// `at` relative to `now` in words: "never", "just now", "2 minutes ago", "3 days ago". A
/// time in the future (clocks differing a little) is "just now".
pub fn relative(at: Option<Timestamp>, now: Timestamp) -> String {
    let Some(at) = at else { return "never".to_owned() };
    let secs = now.micros().saturating_sub(at.micros()) / 1_000_000;
    let (count, unit) = match secs {
        ..60 => return "just now".to_owned(),
        60..3_600 => (secs / 60, "minute"),
        3_600..86_400 => (secs / 3_600, "hour"),
        _ => (secs / 86_400, "day"),
    };
    let plural = if count == 1 { "" } else { "s" };
    format!("{count} {unit}{plural} ago")
}

/// A byte count in binary units with one decimal ("512 B", "1.5 KiB", "3.2 GiB"); no
/// figure yet is "0 B".
pub fn bytes(count: Option<i64>) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    let count = count.unwrap_or(0).max(0);
    if count < 1024 {
        return format!("{count} B");
    }
    let mut value = count as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

/// The day of `at` (`2026-11-26`), for a `<time>` whose `datetime` holds the instant.
pub fn day(at: Timestamp) -> String {
    at.to_string().chars().take(10).collect()
}

/// A device as a row of the portal's lists: every value as the page shows it.
pub struct DeviceRow {
    pub id: String,
    pub name: String,
    pub ipv4: String,
    pub ipv6: String,
    pub online: bool,
    /// The last handshake as RFC 3339, if there was one.
    pub handshake_at: String,
    pub handshake: String,
    pub received: String,
    pub sent: String,
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
            online: online(stats.latest_handshake, now),
            handshake_at: stats.latest_handshake.map(|t| t.to_string()).unwrap_or_default(),
            handshake: relative(stats.latest_handshake, now),
            received: bytes(stats.rx_bytes),
            sent: bytes(stats.tx_bytes),
            remote: stats.remote_ip.clone().unwrap_or_else(|| NONE.to_owned()),
            created_at: device.inserted_at.to_string(),
            created: day(device.inserted_at),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: Timestamp = Timestamp::from_secs(1_800_000_000);

    fn ago(secs: i64) -> Option<Timestamp> {
        Some(NOW.plus_secs(-secs))
    }

    #[test]
    fn relative_times_read_as_words() {
        assert_eq!(relative(None, NOW), "never");
        assert_eq!(relative(ago(0), NOW), "just now");
        assert_eq!(relative(ago(59), NOW), "just now");
        assert_eq!(relative(ago(-30), NOW), "just now");
        assert_eq!(relative(ago(60), NOW), "1 minute ago");
        assert_eq!(relative(ago(150), NOW), "2 minutes ago");
        assert_eq!(relative(ago(3_599), NOW), "59 minutes ago");
        assert_eq!(relative(ago(3_600), NOW), "1 hour ago");
        assert_eq!(relative(ago(86_399), NOW), "23 hours ago");
        assert_eq!(relative(ago(86_400), NOW), "1 day ago");
        assert_eq!(relative(ago(40 * 86_400), NOW), "40 days ago");
    }

    #[test]
    fn online_means_a_handshake_in_the_last_three_minutes() {
        assert!(online(ago(0), NOW) && online(ago(180), NOW) && online(ago(-5), NOW));
        assert!(!online(ago(181), NOW) && !online(None, NOW));
    }

    #[test]
    fn byte_counts_use_binary_units() {
        assert_eq!(bytes(None), "0 B");
        assert_eq!(bytes(Some(0)), "0 B");
        assert_eq!(bytes(Some(1023)), "1023 B");
        assert_eq!(bytes(Some(1024)), "1.0 KiB");
        assert_eq!(bytes(Some(1536)), "1.5 KiB");
        assert_eq!(bytes(Some(5 * 1024 * 1024)), "5.0 MiB");
        assert_eq!(bytes(Some(3_435_973_837)), "3.2 GiB");
        assert_eq!(bytes(Some(1 << 50)), "1024.0 TiB");
        assert_eq!(bytes(Some(-1)), "0 B");
    }

    #[test]
    fn a_day_is_the_date_of_the_instant() {
        assert_eq!(day(NOW), "2027-01-15");
    }
}
