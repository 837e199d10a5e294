//! The statements of sign-in links and the email outbox, shared by both backends
//! ([`ferrozone_domain::sign_in_link`], [`ferrozone_domain::email`]).

use ferrozone_domain::sign_in_link::{Delivery, LinkKind, ListedLink, SignInLink};
use ferrozone_domain::Timestamp;
use uuid::Uuid;

pub(crate) const INSERT_LINK: &str = "INSERT INTO sign_in_links (id, user_id, kind, secret_hash, created_by, \
     email_id, inserted_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)";

pub(crate) const INSERT_EMAIL: &str = "INSERT INTO email_outbox (id, recipient, message, inserted_at, \
     next_attempt_at, attempts, lease_until) VALUES ($1, $2, $3, $4, $4, 0, 0)";

/// The columns [`LinkColumns`] decodes, in its order, of the link `l` in a query...
macro_rules! link_columns {
    () => {
        "l.id, l.user_id, l.kind, l.created_by, l.email_id, l.inserted_at, l.expires_at, l.used_at, l.revoked_at"
    };
}

/// ...and as an update returns them (SQLite's `RETURNING` takes no table name).
macro_rules! returned_columns {
    () => {
        "id, user_id, kind, created_by, email_id, inserted_at, expires_at, used_at, revoked_at"
    };
}

/// `$1` the kind, `$2` the most; with the user's email and the message's delivery.
pub(crate) const LIST: &str = concat!(
    "SELECT ",
    link_columns!(),
    ", u.email, u.last_signed_in_at, e.attempts, e.sent_at, e.gave_up_at, e.last_error \
     FROM sign_in_links l JOIN users u ON u.id = l.user_id LEFT JOIN email_outbox e ON e.id = l.email_id \
     WHERE l.kind = $1 ORDER BY l.inserted_at DESC, l.id DESC LIMIT $2"
);

pub(crate) const BY_HASH: &str = concat!("SELECT ", link_columns!(), " FROM sign_in_links l WHERE l.secret_hash = $1");

/// Uses the link with hash `$1` at `$2` if it is live then.
pub(crate) const USE: &str = concat!(
    "UPDATE sign_in_links SET used_at = $2 \
     WHERE secret_hash = $1 AND used_at IS NULL AND revoked_at IS NULL AND expires_at > $2 RETURNING ",
    returned_columns!()
);

/// Revokes the pending invitation `$1` at `$2`.
pub(crate) const REVOKE: &str = concat!(
    "UPDATE sign_in_links SET revoked_at = $2 \
     WHERE id = $1 AND kind = 'invitation' AND used_at IS NULL AND revoked_at IS NULL AND expires_at > $2 \
     RETURNING ",
    returned_columns!()
);

/// `$1` user, `$2` kind, `$3` now.
pub(crate) const LIVE: &str = "SELECT COUNT(*) FROM sign_in_links WHERE user_id = $1 AND kind = $2 \
     AND expires_at > $3 AND used_at IS NULL AND revoked_at IS NULL";

/// Leases due messages to `$1` until `$2`, `$3` being now and `$4` the most. The outer
/// condition is checked again on the row as it is when updated, so of processes racing for
/// a message one wins.
pub(crate) const CLAIM: &str = "UPDATE email_outbox SET lease_owner = $1, lease_until = $2 \
     WHERE id IN (SELECT id FROM email_outbox WHERE sent_at IS NULL AND gave_up_at IS NULL \
                  AND next_attempt_at <= $3 AND lease_until < $3 ORDER BY next_attempt_at LIMIT $4) \
     AND sent_at IS NULL AND gave_up_at IS NULL AND lease_until < $3 \
     RETURNING id, recipient, message, attempts, inserted_at";

/// `$1` id, `$2` owner, `$3` now: sent, the message emptied.
pub(crate) const SENT: &str = "UPDATE email_outbox SET sent_at = $3, message = $4, last_error = NULL, \
     lease_owner = NULL, lease_until = 0 WHERE id = $1 AND lease_owner = $2";

/// `$1` id, `$2` owner, `$3` the error, `$4` the next attempt.
pub(crate) const FAILED: &str = "UPDATE email_outbox SET attempts = attempts + 1, last_error = $3, \
     next_attempt_at = $4, lease_owner = NULL, lease_until = 0 WHERE id = $1 AND lease_owner = $2";

/// `$1` id, `$2` owner, `$3` the error, `$4` now: given up, the message emptied.
pub(crate) const GAVE_UP: &str = "UPDATE email_outbox SET attempts = attempts + 1, last_error = $3, \
     gave_up_at = $4, message = $5, lease_owner = NULL, lease_until = 0 WHERE id = $1 AND lease_owner = $2";

/// Messages done before `$1`, at most `$2`.
pub(crate) const PRUNE_EMAILS: &str = "DELETE FROM email_outbox WHERE id IN (SELECT id FROM email_outbox \
     WHERE inserted_at < $1 AND (sent_at IS NOT NULL OR gave_up_at IS NOT NULL) LIMIT $2)";

/// Links that expired before `$1`, at most `$2`.
pub(crate) const PRUNE_LINKS: &str = "DELETE FROM sign_in_links WHERE id IN (SELECT id FROM sign_in_links \
     WHERE expires_at < $1 LIMIT $2)";

/// A link's columns as both backends read them.
pub(crate) struct LinkColumns {
    pub id: Uuid,
    pub user_id: Uuid,
    pub kind: String,
    pub created_by: Option<Uuid>,
    pub email_id: Option<Uuid>,
    pub inserted_at: i64,
    pub expires_at: i64,
    pub used_at: Option<i64>,
    pub revoked_at: Option<i64>,
}

impl LinkColumns {
    pub(crate) fn link(self) -> SignInLink {
        SignInLink {
            id: self.id,
            user_id: self.user_id,
            // The table's CHECK admits only the two kinds.
            kind: LinkKind::parse(&self.kind).unwrap_or(LinkKind::MagicLink),
            created_by: self.created_by,
            email_id: self.email_id,
            inserted_at: Timestamp::from_micros(self.inserted_at),
            expires_at: Timestamp::from_micros(self.expires_at),
            used_at: self.used_at.map(Timestamp::from_micros),
            revoked_at: self.revoked_at.map(Timestamp::from_micros),
        }
    }
}

/// A listed link: the link's columns, then the user's email and last sign-in, and the
/// delivery's.
pub(crate) fn listed(
    link: LinkColumns,
    (email, last_signed_in_at): (String, Option<i64>),
    attempts: Option<i64>,
    sent_at: Option<i64>,
    gave_up_at: Option<i64>,
    last_error: Option<String>,
) -> ListedLink {
    let delivery = attempts.map(|attempts| Delivery {
        attempts,
        sent_at: sent_at.map(Timestamp::from_micros),
        gave_up_at: gave_up_at.map(Timestamp::from_micros),
        last_error,
    });
    ListedLink { link: link.link(), email, last_signed_in_at: last_signed_in_at.map(Timestamp::from_micros), delivery }
}
