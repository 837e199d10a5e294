//! The audit log's retention (docs/operations.md, "Audit log").

use clap::Args;

/// Audit log settings.
#[derive(Debug, Clone, Args)]
pub struct AuditSettings {
    /// How long audit events are kept, as `400d`, `90d` or `36h` (at least a day: webhook
    /// deliveries retry from the log for a day) [default: forever].
    #[arg(long, global = true, env = "FERROZONE_AUDIT_RETENTION", value_name = "DURATION",
          value_parser = retention)]
    pub audit_retention: Option<Retention>,
}

/// A retention period, in seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention(pub i64);

const DAY: i64 = 86_400;

/// `<n>d`, `<n>h`, `<n>m` or `<n>s`, at least one day and at most 100 years.
fn retention(text: &str) -> Result<Retention, String> {
    let text = text.trim();
    let split = text.len().saturating_sub(1);
    let (number, unit) = text.split_at(split);
    let scale = match unit {
        "d" => DAY,
        "h" => 3600,
        "m" => 60,
        "s" => 1,
        _ => return Err("give a number and a unit: `400d`, `90d`, `36h`".into()),
    };
    let seconds = number
        .parse::<i64>()
        .ok()
        .and_then(|n| n.checked_mul(scale))
        .filter(|s| *s <= 36_500 * DAY)
        .ok_or("give a number and a unit: `400d`, `90d`, `36h`")?;
    if seconds < DAY {
        return Err("must be at least a day (`1d`): webhook deliveries retry from the log for a day".into());
    }
    Ok(Retention(seconds))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_with_their_unit_and_a_day_at_least() {
        assert_eq!(retention("400d"), Ok(Retention(400 * DAY)));
        assert_eq!(retention("36h"), Ok(Retention(36 * 3600)));
        assert_eq!(retention("86400s"), Ok(Retention(DAY)));
        for bad in ["", "d", "90", "90x", "-1d", "1.5d", "23h", "0d", "99999999999999d"] {
            assert!(retention(bad).is_err(), "{bad}");
        }
        assert!(retention("23h").unwrap_err().contains("at least a day"));
    }
}
