//! Checking the chain: every kept event, in seq order, follows the previous one and carries
//! the MAC of its own fields, and the last one is the head.

use super::{AuditHead, AuditKey, EventRecord};

/// Where verification starts: after the events retention removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChainStart {
    pub seq: i64,
    pub prev_hash: [u8; 32],
}

impl From<&AuditHead> for ChainStart {
    fn from(head: &AuditHead) -> Self {
        Self { seq: head.pruned_seq, prev_hash: head.pruned_hash }
    }
}

/// The first place where the chain does not hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Break {
    /// The event at `seq` is not the one that was recorded: a field was edited.
    Edited { seq: i64 },
    /// Events are missing: `expected` came next, `found` was read instead (or nothing).
    Missing { expected: i64, found: Option<i64> },
    /// The event at `seq` does not follow the one before it: events were reordered, or one
    /// before it was replaced.
    Unlinked { seq: i64 },
    /// The head names a last event that is not the last one read: events at the end were
    /// removed, or the head was edited.
    Head { head_seq: i64, last_read: i64 },
}

impl std::fmt::Display for Break {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Break::Edited { seq } => write!(f, "event {seq} was edited: its hash does not match its fields"),
            Break::Missing { expected, found: Some(found) } => {
                write!(f, "events {expected} to {} are missing", found - 1)
            }
            Break::Missing { expected, found: None } => write!(f, "event {expected} and those after it are missing"),
            Break::Unlinked { seq } => {
                write!(f, "event {seq} does not follow event {}: events were reordered or replaced", seq - 1)
            }
            Break::Head { head_seq, last_read } => write!(
                f,
                "the chain's head names event {head_seq} as the last, but the last event is {last_read}: \
                 events at the end were removed or the head was edited"
            ),
        }
    }
}

/// What a verification checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Verified {
    /// Events checked.
    pub events: u64,
    /// The first and last seq checked (`None` when none are kept).
    pub first: Option<i64>,
    pub last: Option<i64>,
}

/// Checks records fed in seq order, one at a time, so that a long chain is streamed.
#[derive(Debug)]
pub struct Verifier<'k> {
    key: &'k AuditKey,
    next_seq: i64,
    prev_hash: [u8; 32],
    verified: Verified,
}

impl<'k> Verifier<'k> {
    pub fn new(key: &'k AuditKey, start: ChainStart) -> Self {
        Self {
            key,
            next_seq: start.seq + 1,
            prev_hash: start.prev_hash,
            verified: Verified { events: 0, first: None, last: None },
        }
    }

    /// Checks the next record read.
    pub fn push(&mut self, record: &EventRecord) -> Result<(), Break> {
        if record.seq != self.next_seq {
            return Err(Break::Missing { expected: self.next_seq, found: Some(record.seq) });
        }
        if record.hash.as_slice() != record.hash(self.key) {
            return Err(Break::Edited { seq: record.seq });
        }
        if record.prev_hash.as_slice() != self.prev_hash {
            return Err(Break::Unlinked { seq: record.seq });
        }
        self.prev_hash.copy_from_slice(&record.hash);
        self.next_seq += 1;
        self.verified.events += 1;
        self.verified.first.get_or_insert(record.seq);
        self.verified.last = Some(record.seq);
        Ok(())
    }

    /// Checks that the last record read is the head's last event.
    pub fn finish(self, head: &AuditHead) -> Result<Verified, Break> {
        let last_read = self.next_seq - 1;
        if head.last_seq > last_read {
            return Err(Break::Missing { expected: self.next_seq, found: None });
        }
        if head.last_seq != last_read || head.last_hash != self.prev_hash {
            return Err(Break::Head { head_seq: head.last_seq, last_read });
        }
        Ok(self.verified)
    }
}

/// Checks `records` (in seq order) against `head`.
pub fn verify<'a>(
    key: &AuditKey,
    head: &AuditHead,
    records: impl IntoIterator<Item = &'a EventRecord>,
) -> Result<Verified, Break> {
    let mut verifier = Verifier::new(key, ChainStart::from(head));
    for record in records {
        verifier.push(record)?;
    }
    verifier.finish(head)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::{Actor, Change, NewAuditEvent, Origin, Subject};

    fn chain(key: &AuditKey, n: i64) -> (Vec<EventRecord>, AuditHead) {
        let mut head = AuditHead::EMPTY;
        let mut records = Vec::new();
        for seq in 1..=n {
            let event = NewAuditEvent::new(
                Actor::cli(),
                "device.created",
                Subject { kind: "device".into(), id: Some(format!("d{seq}")) },
                Origin::default(),
            )
            .with_changes(vec![Change::value(
                "name",
                None,
                Some(serde_json::json!(format!("laptop {seq}"))),
            )]);
            let record = EventRecord::seal(key, seq, head.last_hash, &event);
            head.last_seq = seq;
            head.last_hash.copy_from_slice(&record.hash);
            records.push(record);
        }
        (records, head)
    }

    #[test]
    fn an_intact_chain_verifies_and_a_record_decodes_to_its_event() {
        let key = AuditKey::unkeyed();
        let (records, head) = chain(&key, 5);
        let verified = verify(&key, &head, &records).unwrap();
        assert_eq!(verified, Verified { events: 5, first: Some(1), last: Some(5) });
        let event = records[2].decode().unwrap();
        assert_eq!(event.seq, 3);
        assert_eq!(event.event.subject.id.as_deref(), Some("d3"));
        assert_eq!(event.event.changes[0].after, Some(serde_json::json!("laptop 3")));
    }

    #[test]
    fn an_edited_field_is_found_at_its_event() {
        let key = AuditKey::unkeyed();
        let (mut records, head) = chain(&key, 5);
        records[3].changes = records[3].changes.replace("laptop 4", "laptop X");
        assert_eq!(verify(&key, &head, &records), Err(Break::Edited { seq: 4 }));
    }

    #[test]
    fn a_deleted_event_is_found_as_missing() {
        let key = AuditKey::unkeyed();
        let (mut records, head) = chain(&key, 5);
        records.remove(1);
        assert_eq!(verify(&key, &head, &records), Err(Break::Missing { expected: 2, found: Some(3) }));
    }

    #[test]
    fn reordered_events_are_unlinked() {
        let key = AuditKey::unkeyed();
        let (mut records, head) = chain(&key, 5);
        // Swap the contents of 2 and 3 but keep the seq numbers in order: each must be
        // re-MACed with its new seq, which needs the key; even then, the links break.
        let (a, b) = (records[1].clone(), records[2].clone());
        records[1] = EventRecord { seq: 2, ..b };
        records[2] = EventRecord { seq: 3, ..a };
        for record in &mut records[1..3] {
            record.hash = record.hash(&key).to_vec();
        }
        assert_eq!(verify(&key, &head, &records), Err(Break::Unlinked { seq: 2 }));
    }

    #[test]
    fn removed_last_events_are_found_by_the_head() {
        let key = AuditKey::unkeyed();
        let (mut records, head) = chain(&key, 5);
        records.truncate(3);
        assert_eq!(verify(&key, &head, &records), Err(Break::Missing { expected: 4, found: None }));
    }

    #[test]
    fn a_chain_made_with_another_key_does_not_verify() {
        let (records, head) = chain(&AuditKey::unkeyed(), 2);
        let other =
            AuditKey::from_cipher(&crate::crypto::Cipher::from_base64(&crate::crypto::Cipher::generate_key()).unwrap());
        assert_eq!(verify(&other, &head, &records), Err(Break::Edited { seq: 1 }));
    }

    #[test]
    fn verification_starts_after_the_pruned_events() {
        let key = AuditKey::unkeyed();
        let (records, mut head) = chain(&key, 5);
        head.pruned_seq = 2;
        head.pruned_hash.copy_from_slice(&records[1].hash);
        let verified = verify(&key, &head, &records[2..]).unwrap();
        assert_eq!(verified, Verified { events: 3, first: Some(3), last: Some(5) });
    }
}
