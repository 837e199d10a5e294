//! Sign-in links (docs/design/invitations.md): an invitation an administrator sends, and the
//! link of magic-link sign-in. A link's secret is 256 random bits, shown once (in the answer
//! to its creation, or in the email that carries it); only its SHA-256 is stored. A link
//! signs in once, before it expires, unless it was revoked; its user must not be disabled.

use serde_json::json;
use uuid::Uuid;

use crate::audit::{Change, Entry, Subject};
use crate::email::QueuedEmail;
use crate::model::User;
use crate::time::Timestamp;

/// How long an invitation lasts unless its creator says otherwise: a week.
pub const INVITATION_HOURS: u32 = 168;
/// The longest an invitation may last: 30 days.
pub const MAX_INVITATION_HOURS: u32 = 720;
/// How long a magic link lasts: 15 minutes.
pub const MAGIC_LINK_SECS: i64 = 900;
/// The most magic links of one user that may be live at once: a request beyond them
/// sends nothing, so nobody fills a mailbox through the sign-in page.
pub const MAX_LIVE_MAGIC_LINKS: u64 = 3;
/// The path a link's secret is appended to.
pub const LINK_PATH: &str = "/sign_in/link/";

/// What a link is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkKind {
    /// Sent by an administrator: the person sets a password (or goes to the identity
    /// provider) and lands on "Add a device".
    Invitation,
    /// Asked for on the sign-in page: a sign-in without a password.
    MagicLink,
}

impl LinkKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Invitation => "invitation",
            Self::MagicLink => "magic_link",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        [Self::Invitation, Self::MagicLink].into_iter().find(|kind| kind.as_str() == text)
    }
}

/// A link as stored (never its secret).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignInLink {
    pub id: Uuid,
    pub user_id: Uuid,
    pub kind: LinkKind,
    /// The administrator who created it (an invitation).
    pub created_by: Option<Uuid>,
    /// The email that carries it, when one was sent.
    pub email_id: Option<Uuid>,
    pub inserted_at: Timestamp,
    pub expires_at: Timestamp,
    pub used_at: Option<Timestamp>,
    pub revoked_at: Option<Timestamp>,
}

/// Where a link stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkStatus {
    Pending,
    Used,
    Revoked,
    Expired,
}

impl LinkStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Used => "used",
            Self::Revoked => "revoked",
            Self::Expired => "expired",
        }
    }
}

impl SignInLink {
    /// Whether a sign-in of its user at `last_signed_in_at` spent it: a link works only until
    /// its user next signs in, by any method (docs/design/invitations.md, "Sign-in links").
    pub fn spent_by(&self, last_signed_in_at: Option<Timestamp>) -> bool {
        self.used_at.is_none() && last_signed_in_at.is_some_and(|at| at > self.inserted_at)
    }

    pub fn status(&self, now: Timestamp) -> LinkStatus {
        if self.used_at.is_some() {
            LinkStatus::Used
        } else if self.revoked_at.is_some() {
            LinkStatus::Revoked
        } else if self.expires_at <= now {
            LinkStatus::Expired
        } else {
            LinkStatus::Pending
        }
    }
}

/// A link to insert: with its secret's hash, the user to create first (an invitation of
/// someone new) and the email that carries it, all in one transaction.
#[derive(Debug, Clone)]
pub struct LinkInsert {
    pub link: SignInLink,
    pub secret_hash: Vec<u8>,
    pub new_user: Option<User>,
    pub email: Option<QueuedEmail>,
}

/// What became of the email that carries a link.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    pub attempts: i64,
    pub sent_at: Option<Timestamp>,
    pub gave_up_at: Option<Timestamp>,
    pub last_error: Option<String>,
}

/// A link in a list, with its user's email and last sign-in, and its email's delivery.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedLink {
    pub link: SignInLink,
    pub email: String,
    pub last_signed_in_at: Option<Timestamp>,
    pub delivery: Option<Delivery>,
}

impl ListedLink {
    /// The link's status, counting it used once its user signed in some other way after
    /// it was made (an invitation accepted through an identity provider): see
    /// [`SignInLink::spent_by`].
    pub fn status(&self, now: Timestamp) -> LinkStatus {
        if self.link.spent_by(self.last_signed_in_at) {
            LinkStatus::Used
        } else {
            self.link.status(now)
        }
    }
}

/// `invitation.created` or `magic_link.created`: for whom, until when, and whether an
/// email carries it; never the secret.
pub fn created_entry(link: &SignInLink) -> Entry {
    let changes = vec![
        Change::value("user_id", None, Some(json!(link.user_id))),
        Change::value("expires_at", None, Some(json!(link.expires_at))),
        Change::value("emailed", None, Some(json!(link.email_id.is_some()))),
        Change::secret("secret"),
    ];
    let action = match link.kind {
        LinkKind::Invitation => "invitation.created",
        LinkKind::MagicLink => "magic_link.created",
    };
    Entry::new(action, Subject::new(link.kind.as_str(), link.id), changes)
}

/// `invitation.revoked` (only invitations are revoked by hand).
pub fn revoked_entry(link: &SignInLink, at: Timestamp) -> Entry {
    let changes = vec![Change::value("revoked_at", None, Some(json!(at)))];
    Entry::new("invitation.revoked", Subject::new(link.kind.as_str(), link.id), changes)
}

/// `invitation.used` or `magic_link.used`: the link signed its user in.
pub fn used_entry(link: &SignInLink, at: Timestamp) -> Entry {
    let changes = vec![Change::value("used_at", None, Some(json!(at)))];
    let action = match link.kind {
        LinkKind::Invitation => "invitation.used",
        LinkKind::MagicLink => "magic_link.used",
    };
    Entry::new(action, Subject::new(link.kind.as_str(), link.id), changes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(used: bool, revoked: bool, expires_in: i64) -> SignInLink {
        let now = Timestamp::from_secs(1_000);
        SignInLink {
            id: Uuid::nil(),
            user_id: Uuid::nil(),
            kind: LinkKind::Invitation,
            created_by: None,
            email_id: None,
            inserted_at: now,
            expires_at: now.plus_secs(expires_in),
            used_at: used.then_some(now),
            revoked_at: revoked.then_some(now),
        }
    }

    #[test]
    fn a_used_link_stays_used_and_only_a_live_unused_one_is_pending() {
        let now = Timestamp::from_secs(1_000);
        assert_eq!(link(false, false, 60).status(now), LinkStatus::Pending);
        assert_eq!(link(false, false, 0).status(now), LinkStatus::Expired, "expiry is exclusive");
        assert_eq!(link(true, true, -60).status(now), LinkStatus::Used);
        assert_eq!(link(false, true, 60).status(now), LinkStatus::Revoked);
    }

    #[test]
    fn a_sign_in_after_a_link_was_made_spends_it() {
        let pending = link(false, false, 60);
        assert!(pending.spent_by(Some(pending.inserted_at.plus_secs(1))));
        assert!(!pending.spent_by(Some(pending.inserted_at)), "a sign-in before it (or at once) does not");
        assert!(!pending.spent_by(None));
        let listed = ListedLink {
            link: pending.clone(),
            email: String::new(),
            last_signed_in_at: Some(pending.inserted_at.plus_secs(5)),
            delivery: None,
        };
        assert_eq!(listed.status(pending.inserted_at), LinkStatus::Used);
    }

    #[test]
    fn kinds_round_trip_through_their_names() {
        for kind in [LinkKind::Invitation, LinkKind::MagicLink] {
            assert_eq!(LinkKind::parse(kind.as_str()), Some(kind));
        }
        assert_eq!(LinkKind::parse("reset"), None);
    }
}
