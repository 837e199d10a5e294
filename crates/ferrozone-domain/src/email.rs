//! Email (docs/design/invitations.md, "The outbox"): the messages Ferrozone sends (the
//! links of invitations and of magic-link sign-in) and the outbox they wait in. A message
//! is queued in the transaction that creates its link, sealed with the secret key (it
//! carries a link's secret), and sent by the mail worker of any process; a failed attempt
//! is retried with a growing delay for a day, and the message is emptied once it is sent
//! or given up.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::crypto::Sealed;
use crate::time::Timestamp;

/// How long a message is retried before it is given up.
pub const GIVE_UP_AFTER_SECS: u64 = 24 * 3600;
/// The first retry's delay; each next one doubles, up to [`MAX_BACKOFF_SECS`].
pub const FIRST_BACKOFF_SECS: u64 = 5;
pub const MAX_BACKOFF_SECS: u64 = 1800;
/// How long a sent or given-up message's row (without its text) is kept, for the
/// invitations page to show what became of it.
pub const KEPT_DAYS: i64 = 30;

/// A message as it is sealed into the outbox.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    pub to: String,
    pub subject: String,
    /// Plain text.
    pub text: String,
}

/// A message to queue.
#[derive(Debug, Clone)]
pub struct QueuedEmail {
    pub id: Uuid,
    pub recipient: String,
    pub message: Sealed,
    pub now: Timestamp,
}

/// A message leased to one sender.
#[derive(Debug, Clone)]
pub struct EmailLease {
    pub id: Uuid,
    pub recipient: String,
    pub message: Sealed,
    /// Failed attempts so far.
    pub attempts: i64,
    pub inserted_at: Timestamp,
}

/// What an attempt came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EmailOutcome {
    Sent,
    /// To be tried again at `next_attempt_at`.
    Failed {
        error: String,
        next_attempt_at: Timestamp,
    },
    /// Refused for good by the server, or failing for a day.
    GaveUp {
        error: String,
    },
}

/// The invitation to `to`, from `inviter` to the site at `site` (its external URL), with the
/// link `url` that lasts until `expires_at`.
pub fn invitation(to: &str, inviter: &str, site: &str, url: &str, expires_at: Timestamp) -> Message {
    let text = format!(
        "Hello,\n\n{inviter} invited you to the VPN at {site}.\n\n\
         Open this link to set up your account and add your first device:\n\n{url}\n\n\
         The link works once, until {expires_at}. If you did not expect this invitation, ignore this email.\n"
    );
    Message { to: to.to_owned(), subject: "You are invited to the VPN".to_owned(), text }
}

/// A magic link for `to` on the site at `site`, working for `minutes`.
pub fn magic_link(to: &str, site: &str, url: &str, minutes: i64) -> Message {
    let text = format!(
        "Hello,\n\nSomeone asked to sign in to the VPN at {site} as {to}.\n\n\
         Open this link to sign in:\n\n{url}\n\n\
         The link works once, within {minutes} minutes. If you did not ask for it, ignore this email: \
         nobody can sign in without the link.\n"
    );
    Message { to: to.to_owned(), subject: "Your sign-in link".to_owned(), text }
}

pub use crate::time::backoff;

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn backoff_doubles_up_to_its_cap() {
        let (first, max) = (Duration::from_secs(FIRST_BACKOFF_SECS), Duration::from_secs(MAX_BACKOFF_SECS));
        let delays: Vec<u64> = (1..=4).map(|n| backoff(first, max, n).as_secs()).collect();
        assert_eq!(delays, [5, 10, 20, 40]);
        assert_eq!(backoff(first, max, 50).as_secs(), MAX_BACKOFF_SECS);
    }

    #[test]
    fn the_messages_carry_their_link_and_its_lifetime() {
        let invited = invitation(
            "ada@example.com",
            "admin@example.com",
            "https://vpn.example",
            "https://x/l",
            Timestamp::from_secs(0),
        );
        assert_eq!(invited.to, "ada@example.com");
        assert!(invited.text.contains("https://x/l") && invited.text.contains("admin@example.com invited you"));
        assert!(invited.text.contains("1970-01-01T00:00:00"), "{}", invited.text);
        let magic = magic_link("ada@example.com", "https://vpn.example", "https://x/m", 15);
        assert!(magic.text.contains("https://x/m") && magic.text.contains("15 minutes"));
    }
}
