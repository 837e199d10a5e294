//! Timestamps: UTC, microsecond precision, rendered as RFC 3339 with exactly
//! six fractional digits (`2026-11-22T10:04:05.123456Z`).

use std::fmt;

use chrono::{DateTime, Datelike, Timelike, Utc};
use serde::{Serialize, Serializer};

/// Microseconds since the Unix epoch, UTC. Stored as a plain integer by every backend.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(i64);

impl Timestamp {
    pub fn now() -> Self {
        Self(Utc::now().timestamp_micros())
    }

    pub const fn from_micros(micros: i64) -> Self {
        Self(micros)
    }

    pub const fn from_secs(secs: i64) -> Self {
        Self(secs.saturating_mul(1_000_000))
    }

    pub const fn micros(self) -> i64 {
        self.0
    }

    pub const fn plus_secs(self, secs: i64) -> Self {
        Self(self.0.saturating_add(secs.saturating_mul(1_000_000)))
    }

    pub const fn plus_days(self, days: i64) -> Self {
        self.plus_secs(days.saturating_mul(86_400))
    }

    /// An RFC 3339 time with any offset (`2026-11-22T10:04:05Z`, `…+02:00`), as query
    /// parameters and command flags take it; `None` when `text` is not one.
    pub fn parse_rfc3339(text: &str) -> Option<Self> {
        DateTime::parse_from_rfc3339(text.trim()).ok().map(|t| Self(t.timestamp_micros()))
    }
}

/// The delay before the next attempt after `attempts` failed ones: `first`, doubling with
/// each failure, at most `max` (webhook and email deliveries).
pub fn backoff(first: std::time::Duration, max: std::time::Duration, attempts: i64) -> std::time::Duration {
    let doublings = attempts.saturating_sub(1).clamp(0, 30) as u32;
    first.saturating_mul(1 << doublings).min(max)
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Written field by field: a format string (`%Y-%m-%d…`) would be parsed again on
        // every call, and every API response renders two or more timestamps.
        let Some(t) = DateTime::<Utc>::from_timestamp_micros(self.0) else {
            return write!(f, "invalid-timestamp({})", self.0);
        };
        let (date, time) = (t.date_naive(), t.time());
        write!(
            f,
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}Z",
            date.year(),
            date.month(),
            date.day(),
            time.hour(),
            time.minute(),
            time.second(),
            time.nanosecond() / 1000
        )
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_six_fraction_digits_and_z() {
        assert_eq!(Timestamp::from_micros(0).to_string(), "1970-01-01T00:00:00.000000Z");
        assert_eq!(Timestamp::from_micros(1_795_000_000_123_456).to_string(), "2026-11-18T11:06:40.123456Z");
    }

    #[test]
    fn renders_as_chrono_does() {
        let samples = [-1, 1, 999_999, 951_782_400_000_000, 4_102_444_799_999_999, 253_402_300_799_999_999];
        for micros in samples {
            let chrono = DateTime::<Utc>::from_timestamp_micros(micros).unwrap().format("%Y-%m-%dT%H:%M:%S%.6fZ");
            assert_eq!(Timestamp::from_micros(micros).to_string(), chrono.to_string(), "{micros}");
        }
    }

    #[test]
    fn days_are_added_in_microseconds() {
        let t = Timestamp::from_secs(10);
        assert_eq!(t.plus_days(1).micros(), (10 + 86_400) * 1_000_000);
    }
}
