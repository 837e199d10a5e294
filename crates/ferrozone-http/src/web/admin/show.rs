//! How the console shows times and amounts: relative ages and human byte counts, with
//! the exact value kept for a tooltip or a `<time datetime>`.

use ferrozone_domain::Timestamp;

/// A moment as the console shows it: how long ago (or from now), and the exact time.
pub struct When {
    /// `3 minutes ago`, `in 29 days`, `just now`.
    pub relative: String,
    /// RFC 3339, for `<time datetime>`.
    pub exact: String,
}

impl When {
    pub fn new(at: Timestamp, now: Timestamp) -> Self {
        Self { relative: relative(at, now), exact: at.to_string() }
    }
}

/// `at` relative to `now` in the largest whole unit: seconds under a minute say "just now".
pub fn relative(at: Timestamp, now: Timestamp) -> String {
    let secs = (now.micros() - at.micros()) / 1_000_000;
    let (amount, past) = (secs.unsigned_abs(), secs >= 0);
    if amount < 60 {
        return "just now".to_owned();
    }
    let (n, unit) = match amount {
        a if a < 3_600 => (a / 60, "minute"),
        a if a < 86_400 => (a / 3_600, "hour"),
        a if a < 86_400 * 60 => (a / 86_400, "day"),
        a if a < 86_400 * 730 => (a / (86_400 * 30), "month"),
        a => (a / (86_400 * 365), "year"),
    };
    let plural = if n == 1 { "" } else { "s" };
    if past {
        format!("{n} {unit}{plural} ago")
    } else {
        format!("in {n} {unit}{plural}")
    }
}

/// A byte count in binary units with one decimal (`1.5 MiB`); whole bytes below 1 KiB.
pub fn bytes(count: i64) -> String {
    const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
    let count = count.max(0);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_read_in_their_largest_unit() {
        let now = Timestamp::from_secs(1_000_000_000);
        let ago = |secs: i64| relative(now.plus_secs(-secs), now);
        assert_eq!(ago(5), "just now");
        assert_eq!(ago(60), "1 minute ago");
        assert_eq!(ago(179), "2 minutes ago");
        assert_eq!(ago(7_200), "2 hours ago");
        assert_eq!(ago(86_400 * 3), "3 days ago");
        assert_eq!(ago(86_400 * 90), "3 months ago");
        assert_eq!(ago(86_400 * 800), "2 years ago");
        assert_eq!(relative(now.plus_days(29), now), "in 29 days");
    }

    #[test]
    fn byte_counts_use_binary_units() {
        assert_eq!(bytes(0), "0 B");
        assert_eq!(bytes(1023), "1023 B");
        assert_eq!(bytes(1536), "1.5 KiB");
        assert_eq!(bytes(5 * 1024 * 1024 * 1024), "5.0 GiB");
        assert_eq!(bytes(-4), "0 B");
    }
}
