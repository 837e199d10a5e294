//! Timestamps: UTC, microsecond precision, rendered as RFC 3339 with exactly
//! six fractional digits (`2026-11-22T10:04:05.123456Z`).

use std::fmt;

use chrono::{DateTime, Utc};
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
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match DateTime::<Utc>::from_timestamp_micros(self.0) {
            Some(t) => write!(f, "{}", t.format("%Y-%m-%dT%H:%M:%S%.6fZ")),
            None => write!(f, "invalid-timestamp({})", self.0),
        }
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
    fn days_are_added_in_microseconds() {
        let t = Timestamp::from_secs(10);
        assert_eq!(t.plus_days(1).micros(), (10 + 86_400) * 1_000_000);
    }
}
