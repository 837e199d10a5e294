//! The chain's head, sealed: the last event and the pruned mark, under a MAC of the chain's
//! key, so that someone who can write the database but has no key cannot move them; and
//! the `audit.pruned` event by which retention vouches for the mark it moves.

use serde_json::json;

use super::{Actor, AuditKey, Change, NewAuditEvent, Origin, Subject};

/// The action of the event retention appends when it removes events.
pub const PRUNED_ACTION: &str = "audit.pruned";

/// The head of the chain: the last event appended and where the kept events start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AuditHead {
    /// The last event's seq (0 before the first).
    pub last_seq: i64,
    pub last_hash: [u8; 32],
    /// Events up to this seq were removed by retention (0: none)...
    pub pruned_seq: i64,
    /// ...and this was the hash of the last one removed: the next event's `prev_hash`.
    pub pruned_hash: [u8; 32],
    /// The MAC of the four fields above ([`Self::seal_of`]); `None` before the first event,
    /// and in a database from before heads were sealed until its next recorded event.
    pub seal: Option<[u8; 32]>,
}

/// What a head's seal says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SealState {
    /// It matches the head's fields.
    Sealed,
    /// There is none: a head that never moved, or one from before heads were sealed.
    Unsealed,
    /// It does not match: the head was changed without the key.
    Broken,
}

impl AuditHead {
    pub const EMPTY: Self = Self { last_seq: 0, last_hash: [0; 32], pruned_seq: 0, pruned_hash: [0; 32], seal: None };

    /// The MAC that seals the head's last and pruned positions and hashes.
    pub fn seal_of(&self, key: &AuditKey) -> [u8; 32] {
        use hmac::Mac;
        let mut mac = key.mac();
        mac.update(b"ferrozone audit head v1\0");
        mac.update(&self.last_seq.to_be_bytes());
        mac.update(&self.last_hash);
        mac.update(&self.pruned_seq.to_be_bytes());
        mac.update(&self.pruned_hash);
        mac.finalize().into_bytes().into()
    }

    pub fn seal_state(&self, key: &AuditKey) -> SealState {
        use subtle::ConstantTimeEq;
        match self.seal {
            None => SealState::Unsealed,
            Some(seal) if bool::from(seal.ct_eq(&self.seal_of(key))) => SealState::Sealed,
            Some(_) => SealState::Broken,
        }
    }

    /// The head a writer stores after moving this one (as it read it) to `next`'s positions:
    /// `next` sealed, when this head's seal holds or it has none (a database from before
    /// heads were sealed gets its seal so). A head whose seal does not match keeps its
    /// broken seal: a writer does not vouch for a head changed without the key, and
    /// `ferrozone audit verify` goes on reporting it.
    pub fn moved_to(&self, key: &AuditKey, next: AuditHead) -> AuditHead {
        let seal = match self.seal_state(key) {
            SealState::Sealed | SealState::Unsealed => Some(next.seal_of(key)),
            SealState::Broken => {
                tracing::error!(
                    "the audit chain's head was changed without the secret key; see `ferrozone audit verify`"
                );
                self.seal
            }
        };
        AuditHead { seal, ..next }
    }

    /// This head with `seq` and `hash` as its last event.
    pub fn with_last(&self, seq: i64, hash: [u8; 32]) -> AuditHead {
        AuditHead { last_seq: seq, last_hash: hash, ..*self }
    }

    /// This head with events up to `seq`, whose hash was `hash`, removed.
    pub fn with_pruned(&self, seq: i64, hash: [u8; 32]) -> AuditHead {
        AuditHead { pruned_seq: seq, pruned_hash: hash, ..*self }
    }
}

/// The event retention appends, in the transaction that removes events up to `seq` (whose
/// hash was `hash`) and moves the head's mark there: it vouches for the mark, chained
/// after every event kept, so that a mark moved without the key is found.
pub fn pruned_event(seq: i64, hash: &[u8; 32], removed: u64) -> NewAuditEvent {
    let subject = Subject { kind: "audit".to_owned(), id: None };
    NewAuditEvent::new(Actor::system(), PRUNED_ACTION, subject, Origin::default()).with_changes(vec![
        Change::value("through_seq", None, Some(json!(seq))),
        Change::value("through_hash", None, Some(json!(hex::encode(hash)))),
        Change::value("removed", None, Some(json!(removed))),
    ])
}

/// The mark an `audit.pruned` event's changes vouch for: `(seq, hash)`.
pub(crate) fn vouched_mark(changes: &str) -> Option<(i64, [u8; 32])> {
    let changes: Vec<Change> = serde_json::from_str(changes).ok()?;
    let after = |field: &str| changes.iter().find(|c| c.field == field).and_then(|c| c.after.clone());
    let seq = after("through_seq")?.as_i64()?;
    let hash = hex::decode(after("through_hash")?.as_str()?).ok()?.try_into().ok()?;
    Some((seq, hash))
}
