//! How the pages show times and amounts: how long ago (or from now) in words, a date, a
//! byte count. `assets/devices.js` says the same words in the browser for the portal's live
//! device list, so a row reads the same whether the server or the update wrote it: change
//! both together.

use chrono::{DateTime, Utc};
use ferrozone_domain::Timestamp;

/// A device's status while its owner is disabled, whatever its last handshake: the peer
/// left the interface when the user was disabled (docs/web.md, "Devices").
pub const OFF_THE_VPN_USER_DISABLED: &str = "Off the VPN: user disabled";
/// The status of a paused device, wherever it is shown.
pub const PAUSED: &str = "Paused";

/// A moment as a page shows it: in words, and exactly for a tooltip or `<time datetime>`.
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

/// `at` relative to `now` in its largest whole unit, past (`3 minutes ago`) or future
/// (`in 29 days`); under a minute either way is `just now`. Days run to 60 before months
/// (of 30 days) take over, and months to 24 before years (of 365 days), so the figure never
/// rounds away much.
pub fn relative(at: Timestamp, now: Timestamp) -> String {
    let secs = now.micros().saturating_sub(at.micros()) / 1_000_000;
    let amount = secs.unsigned_abs();
    let (n, unit) = match amount {
        ..60 => return "just now".to_owned(),
        60..3_600 => (amount / 60, "minute"),
        3_600..86_400 => (amount / 3_600, "hour"),
        86_400..5_184_000 => (amount / 86_400, "day"),
        5_184_000..63_072_000 => (amount / 2_592_000, "month"),
        _ => (amount / 31_536_000, "year"),
    };
    let plural = if n == 1 { "" } else { "s" };
    if secs >= 0 {
        format!("{n} {unit}{plural} ago")
    } else {
        format!("in {n} {unit}{plural}")
    }
}

/// How long before `now` something happened at `at`, as [`relative`] says it. A time after
/// `now` can only come from a clock running a little ahead (a peer's handshake, another
/// server), so it reads `just now` rather than `in 2 minutes`.
pub fn ago(at: Timestamp, now: Timestamp) -> String {
    relative(at.min(now), now)
}

/// A byte count in binary units with one decimal (`1.5 KiB`, `3.2 GiB`); whole bytes below
/// 1 KiB, and a negative count (never reported) as `0 B`.
pub fn bytes(count: i64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
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

/// The day of `at` (`2026-11-26`), for a `<time>` whose `datetime` holds the instant.
pub fn day(at: Timestamp) -> String {
    at.to_string().chars().take(10).collect()
}

/// `at` to the minute, as people read it: `2026-11-26 12:40 UTC`.
pub fn date(at: Timestamp) -> String {
    DateTime::<Utc>::from_timestamp_micros(at.micros())
        .map(|t| t.format("%Y-%m-%d %H:%M UTC").to_string())
        .unwrap_or_else(|| "unknown".to_owned())
}

/// A domain message at a form's field as a sentence under the field's `name`: `Destination
/// can't be blank`; one of Firezone's messages that is no predicate after a colon (`Port
/// range: bad format`); one naming its field already, capitalised (`Destination overlaps
/// with an existing rule`); one that is a sentence already (or with no name), as it is.
pub fn sentence(name: &str, message: &str) -> String {
    if name.is_empty() || message.starts_with(char::is_uppercase) {
        return message.to_owned();
    }
    if let Some(rest) = message.strip_prefix(&name.to_lowercase()) {
        return format!("{name}{rest}");
    }
    const PREDICATES: [&str; 7] = ["is ", "can't ", "cannot ", "does ", "has ", "must ", "should "];
    if PREDICATES.iter().any(|start| message.starts_with(start)) {
        format!("{name} {message}")
    } else {
        format!("{name}: {message}")
    }
}

/// Each of a field's domain `messages` as a [`sentence`], one after the other.
pub fn sentences(name: &str, messages: &[String]) -> String {
    messages.iter().map(|message| sentence(name, message)).collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: Timestamp = Timestamp::from_secs(1_800_000_000);
    const DAY: i64 = 86_400;

    fn before(secs: i64) -> String {
        relative(NOW.plus_secs(-secs), NOW)
    }

    #[test]
    fn under_a_minute_either_way_is_just_now() {
        assert_eq!(before(0), "just now");
        assert_eq!(before(59), "just now");
        assert_eq!(before(-59), "just now");
    }

    #[test]
    fn past_times_read_in_their_largest_whole_unit() {
        assert_eq!(before(60), "1 minute ago");
        assert_eq!(before(150), "2 minutes ago");
        assert_eq!(before(3_599), "59 minutes ago");
        assert_eq!(before(3_600), "1 hour ago");
        assert_eq!(before(7_199), "1 hour ago");
        assert_eq!(before(DAY - 1), "23 hours ago");
        assert_eq!(before(DAY), "1 day ago");
        assert_eq!(before(40 * DAY), "40 days ago");
        assert_eq!(before(60 * DAY - 1), "59 days ago");
        assert_eq!(before(60 * DAY), "2 months ago");
        assert_eq!(before(90 * DAY), "3 months ago");
        assert_eq!(before(729 * DAY), "24 months ago");
        assert_eq!(before(730 * DAY), "2 years ago");
    }

    #[test]
    fn future_times_read_from_now() {
        assert_eq!(before(-60), "in 1 minute");
        assert_eq!(relative(NOW.plus_days(29), NOW), "in 29 days");
        assert_eq!(relative(NOW.plus_days(400), NOW), "in 13 months");
    }

    #[test]
    fn ago_reads_a_time_ahead_of_now_as_just_now() {
        assert_eq!(ago(NOW.plus_secs(-120), NOW), "2 minutes ago");
        assert_eq!(ago(NOW.plus_secs(30), NOW), "just now");
        assert_eq!(ago(NOW.plus_days(3), NOW), "just now");
    }

    #[test]
    fn extreme_times_do_not_overflow() {
        assert_eq!(relative(Timestamp::from_micros(i64::MIN), NOW), "292471 years ago");
        assert!(relative(Timestamp::from_micros(i64::MAX), NOW).starts_with("in "));
    }

    #[test]
    fn byte_counts_use_binary_units() {
        assert_eq!(bytes(0), "0 B");
        assert_eq!(bytes(1023), "1023 B");
        assert_eq!(bytes(1024), "1.0 KiB");
        assert_eq!(bytes(1536), "1.5 KiB");
        assert_eq!(bytes(5 * 1024 * 1024), "5.0 MiB");
        assert_eq!(bytes(3_435_973_837), "3.2 GiB");
        assert_eq!(bytes(5 * 1024 * 1024 * 1024), "5.0 GiB");
        assert_eq!(bytes(1 << 50), "1024.0 TiB");
        assert_eq!(bytes(-4), "0 B");
    }

    #[test]
    fn a_day_is_the_date_of_the_instant() {
        assert_eq!(day(NOW), "2027-01-15");
    }

    #[test]
    fn dates_are_utc_to_the_minute() {
        assert_eq!(date(Timestamp::from_secs(0)), "1970-01-01 00:00 UTC");
    }

    #[test]
    fn messages_read_as_sentences() {
        assert_eq!(sentence("Destination", "can't be blank"), "Destination can't be blank");
        assert_eq!(sentence("Port range", "bad format"), "Port range: bad format");
        assert_eq!(
            sentence("Destination", "destination overlaps with an existing rule"),
            "Destination overlaps with an existing rule"
        );
        assert_eq!(sentence("User", "No user has this email."), "No user has this email.");
        assert_eq!(
            sentences("MTU", &["is invalid".into(), "must be a whole number".into()]),
            "MTU is invalid MTU must be a whole number"
        );
    }
}
