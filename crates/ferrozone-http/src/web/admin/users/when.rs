//! Times as the console shows them: a date people read (`2026-11-26 12:40 UTC`) and how
//! long ago that was (`5 minutes ago`).

use chrono::{DateTime, Utc};
use ferrozone_domain::Timestamp;

/// `2026-11-26 12:40 UTC`.
pub fn date(at: Timestamp) -> String {
    DateTime::<Utc>::from_timestamp_micros(at.micros())
        .map(|t| t.format("%Y-%m-%d %H:%M UTC").to_string())
        .unwrap_or_else(|| "unknown".to_owned())
}

/// How long before `now` `at` was, in its largest whole unit: `just now`, `3 minutes ago`,
/// `1 day ago`. A time after `now` (another clock) is `just now`.
pub fn ago(at: Timestamp, now: Timestamp) -> String {
    let secs = now.micros().saturating_sub(at.micros()) / 1_000_000;
    let (n, unit) = match secs {
        ..60 => return "just now".to_owned(),
        60..3_600 => (secs / 60, "minute"),
        3_600..86_400 => (secs / 3_600, "hour"),
        86_400..2_592_000 => (secs / 86_400, "day"),
        2_592_000..31_536_000 => (secs / 2_592_000, "month"),
        _ => (secs / 31_536_000, "year"),
    };
    format!("{n} {unit}{} ago", if n == 1 { "" } else { "s" })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ago_says_the_largest_whole_unit() {
        let now = Timestamp::from_secs(1_000_000_000);
        let before = |secs: i64| ago(Timestamp::from_secs(1_000_000_000 - secs), now);
        assert_eq!(before(0), "just now");
        assert_eq!(before(-5), "just now");
        assert_eq!(before(59), "just now");
        assert_eq!(before(60), "1 minute ago");
        assert_eq!(before(7_199), "1 hour ago");
        assert_eq!(before(2 * 86_400), "2 days ago");
        assert_eq!(before(400 * 86_400), "1 year ago");
    }

    #[test]
    fn dates_are_utc_to_the_minute() {
        assert_eq!(date(Timestamp::from_secs(0)), "1970-01-01 00:00 UTC");
    }
}
