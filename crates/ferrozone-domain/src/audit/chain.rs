//! Checking the chain: every kept event, in seq order, follows the previous one and carries
//! the MAC of its own fields; the last one is the head, nothing is kept at or below the
//! pruned mark nor after the head, the head's seal holds, and an `audit.pruned` event
//! vouches for the mark.

use super::head::{vouched_mark, SealState, PRUNED_ACTION};
use super::{AuditHead, AuditKey, AuditQuery, EventRecord};
use crate::error;
use crate::store::AuditLog;

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
    /// The event at `seq` is kept although the head's mark says events up to `pruned_seq`
    /// were removed: the mark was moved (to hide the events before it).
    BelowMark { seq: i64, pruned_seq: i64 },
    /// The event at `seq` comes after the head's last event `head_seq`: it was added
    /// without Ferrozone.
    AfterHead { seq: i64, head_seq: i64 },
    /// The head's seal does not match its positions: the head was changed without the key.
    HeadSeal,
    /// The head (last event `head_seq`) carries no seal.
    Unsealed { head_seq: i64 },
    /// The head says events up to `pruned_seq` were removed, but no `audit.pruned` event
    /// vouches for that mark.
    Unvouched { pruned_seq: i64 },
}

impl Break {
    /// The event the break is reported at, when it is one event's.
    pub fn at(&self) -> Option<i64> {
        match *self {
            Break::Edited { seq } | Break::Unlinked { seq } => Some(seq),
            Break::BelowMark { seq, .. } | Break::AfterHead { seq, .. } => Some(seq),
            Break::Missing { expected, .. } => Some(expected),
            Break::Head { head_seq, last_read } => Some(head_seq.min(last_read + 1)),
            Break::HeadSeal | Break::Unsealed { .. } | Break::Unvouched { .. } => None,
        }
    }
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
            Break::BelowMark { seq, pruned_seq } => write!(
                f,
                "event {seq} is kept, but the chain's head says events up to {pruned_seq} were removed: \
                 the pruned mark was moved"
            ),
            Break::AfterHead { seq, head_seq } => {
                write!(f, "event {seq} comes after the chain's head (event {head_seq}): it was added outside Ferrozone")
            }
            Break::HeadSeal => {
                write!(f, "the chain's head does not match its seal: it was changed without the secret key")
            }
            Break::Unsealed { head_seq } => write!(
                f,
                "the chain's head (event {head_seq}) is not sealed: a database from before heads were sealed \
                 seals it with its next recorded event; otherwise its seal was removed outside Ferrozone"
            ),
            Break::Unvouched { pruned_seq } => write!(
                f,
                "the chain's head says events up to {pruned_seq} were removed, but no audit.pruned event \
                 vouches for it: the pruned mark was moved (or set by a version before audit.pruned, \
                 until retention next removes events)"
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
    start_seq: i64,
    next_seq: i64,
    prev_hash: [u8; 32],
    /// The mark the last `audit.pruned` event read vouches for.
    vouched: Option<(i64, [u8; 32])>,
    verified: Verified,
}

impl<'k> Verifier<'k> {
    pub fn new(key: &'k AuditKey, start: ChainStart) -> Self {
        Self {
            key,
            start_seq: start.seq,
            next_seq: start.seq + 1,
            prev_hash: start.prev_hash,
            vouched: None,
            verified: Verified { events: 0, first: None, last: None },
        }
    }

    /// Checks the next record read.
    pub fn push(&mut self, record: &EventRecord) -> Result<(), Break> {
        if record.seq <= self.start_seq {
            return Err(Break::BelowMark { seq: record.seq, pruned_seq: self.start_seq });
        }
        if record.seq != self.next_seq {
            return Err(Break::Missing { expected: self.next_seq, found: Some(record.seq) });
        }
        if record.hash.as_slice() != record.hash(self.key) {
            return Err(Break::Edited { seq: record.seq });
        }
        if record.prev_hash.as_slice() != self.prev_hash {
            return Err(Break::Unlinked { seq: record.seq });
        }
        if record.action == PRUNED_ACTION {
            self.vouched = vouched_mark(&record.changes);
        }
        self.prev_hash.copy_from_slice(&record.hash);
        self.next_seq += 1;
        self.verified.events += 1;
        self.verified.first.get_or_insert(record.seq);
        self.verified.last = Some(record.seq);
        Ok(())
    }

    /// Checks that the last record read is the head's last event, that the head's seal
    /// holds and that the last `audit.pruned` event read vouches for its mark.
    pub fn finish(self, head: &AuditHead) -> Result<Verified, Break> {
        check_seal(self.key, head)?;
        let last_read = self.next_seq - 1;
        if head.last_seq > last_read {
            return Err(Break::Missing { expected: self.next_seq, found: None });
        }
        if head.last_seq != last_read || head.last_hash != self.prev_hash {
            return Err(Break::Head { head_seq: head.last_seq, last_read });
        }
        if head.pruned_seq != 0 && self.vouched != Some((head.pruned_seq, head.pruned_hash)) {
            return Err(Break::Unvouched { pruned_seq: head.pruned_seq });
        }
        Ok(self.verified)
    }
}

/// Checks the head's seal: it must hold, or be absent from a head that never moved.
pub fn check_seal(key: &AuditKey, head: &AuditHead) -> Result<(), Break> {
    match head.seal_state(key) {
        SealState::Sealed => Ok(()),
        SealState::Unsealed if head.last_seq == 0 && head.pruned_seq == 0 => Ok(()),
        SealState::Unsealed => Err(Break::Unsealed { head_seq: head.last_seq }),
        SealState::Broken => Err(Break::HeadSeal),
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
        if record.seq > head.last_seq {
            return Err(Break::AfterHead { seq: record.seq, head_seq: head.last_seq });
        }
        verifier.push(record)?;
    }
    verifier.finish(head)
}

/// Records read per page by [`verify_log`]: a long chain is streamed, never held whole.
const PAGE: u32 = 1000;

/// Checks the whole log of `store`, streamed in pages: every row from the lowest seq on,
/// so that a row kept at or below the pruned mark is found, and every row after the head
/// read first. A row after that head is one a running server appended since, or one added
/// outside Ferrozone: the head is read again (it moves in the transaction that appends, so
/// the new head covers every row committed before it), and a row still after it is a
/// break. The outer error is the store's; the inner one the first break.
pub async fn verify_log<S: AuditLog + ?Sized>(store: &S, key: &AuditKey) -> error::Result<Result<Verified, Break>> {
    let mut head = store.audit_head().await?;
    if let Err(broken) = check_seal(key, &head) {
        return Ok(Err(broken));
    }
    let mut verifier = Verifier::new(key, ChainStart::from(&head));
    let mut after = i64::MIN;
    loop {
        let query = AuditQuery { after_seq: Some(after), limit: PAGE, ..AuditQuery::default() };
        let page = store.audit_records(&query).await?;
        for record in &page {
            if record.seq > head.last_seq && record.seq > verifier.start_seq {
                head = store.audit_head().await?;
                if record.seq > head.last_seq {
                    return Ok(Err(Break::AfterHead { seq: record.seq, head_seq: head.last_seq }));
                }
            }
            if let Err(broken) = verifier.push(record) {
                return Ok(Err(broken));
            }
        }
        // On until a short page reaches the head (read again meanwhile, perhaps further on);
        // an empty page ends it, the missing tail being the verifier's to report.
        let Some(last) = page.last() else { break };
        after = last.seq;
        if page.len() < PAGE as usize && after >= head.last_seq {
            break;
        }
    }
    Ok(verifier.finish(&head))
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
        head.seal = Some(head.seal_of(key));
        (records, head)
    }

    /// `records` and `head` after retention removed events up to `through`: the mark moved
    /// and vouched for by an `audit.pruned` event, the head sealed.
    fn pruned(
        key: &AuditKey,
        mut records: Vec<EventRecord>,
        head: AuditHead,
        through: usize,
    ) -> (Vec<EventRecord>, AuditHead) {
        let hash: [u8; 32] = records[through - 1].hash.clone().try_into().unwrap();
        let seq = records[through - 1].seq;
        let event = crate::audit::pruned_event(seq, &hash, through as u64);
        let record = EventRecord::seal(key, head.last_seq + 1, head.last_hash, &event);
        let next = head.with_pruned(seq, hash).with_last(record.seq, record.hash.clone().try_into().unwrap());
        records.push(record);
        (records.split_off(through), head.moved_to(key, next))
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
    fn verification_starts_after_the_pruned_events_whose_mark_is_vouched_for() {
        let key = AuditKey::unkeyed();
        let (records, head) = chain(&key, 5);
        let (kept, head) = pruned(&key, records, head, 2);
        let verified = verify(&key, &head, &kept).unwrap();
        assert_eq!(verified, Verified { events: 4, first: Some(3), last: Some(6) });
        assert_eq!(kept[3].action, "audit.pruned");
    }

    #[test]
    fn a_head_changed_without_the_key_breaks_its_seal() {
        let key = AuditKey::unkeyed();
        let (records, head) = chain(&key, 5);
        // The mark moved past the first two events, which are removed: the chain from 3 on
        // is whole, but the head no longer matches its seal.
        let moved = AuditHead { pruned_seq: 2, pruned_hash: records[1].hash.clone().try_into().unwrap(), ..head };
        assert_eq!(verify(&key, &moved, &records[2..]), Err(Break::HeadSeal));
        // With its seal removed, it is unsealed; with one made by another key, broken.
        assert_eq!(
            verify(&key, &AuditHead { seal: None, ..moved }, &records[2..]),
            Err(Break::Unsealed { head_seq: 5 })
        );
        let forged = AuditHead { seal: Some(moved.seal_of(&AuditKey::from_cipher(&other_cipher()))), ..moved };
        assert_eq!(verify(&key, &forged, &records[2..]), Err(Break::HeadSeal));
    }

    #[test]
    fn a_mark_no_audit_pruned_event_vouches_for_is_found() {
        let key = AuditKey::unkeyed();
        let (records, head) = chain(&key, 5);
        // Even sealed (as a writer re-seals a head whose seal was removed), a mark moved by
        // hand has no event vouching for it.
        let hash = records[1].hash.clone().try_into().unwrap();
        let moved = head.moved_to(&key, head.with_pruned(2, hash));
        assert_eq!(verify(&key, &moved, &records[2..]), Err(Break::Unvouched { pruned_seq: 2 }));
    }

    #[test]
    fn events_kept_at_or_below_the_mark_or_after_the_head_are_found() {
        let key = AuditKey::unkeyed();
        let (records, head) = chain(&key, 5);
        let (mut kept, head) = pruned(&key, records.clone(), head, 2);
        let mut with_early = vec![records[1].clone()];
        with_early.extend(kept.iter().cloned());
        assert_eq!(verify(&key, &head, &with_early), Err(Break::BelowMark { seq: 2, pruned_seq: 2 }));
        kept.push(EventRecord { seq: 7, ..records[4].clone() });
        assert_eq!(verify(&key, &head, &kept), Err(Break::AfterHead { seq: 7, head_seq: 6 }));
    }

    #[test]
    fn a_writer_seals_an_unsealed_head_but_carries_a_broken_seal_forward() {
        let key = AuditKey::unkeyed();
        let (_, head) = chain(&key, 2);
        let unsealed = AuditHead { seal: None, ..head };
        let next = unsealed.moved_to(&key, unsealed.with_last(3, [3; 32]));
        assert_eq!(next.seal_state(&key), SealState::Sealed);
        let broken = AuditHead { last_seq: 1, ..head };
        let next = broken.moved_to(&key, broken.with_last(2, [2; 32]));
        assert_eq!((next.seal_state(&key), next.seal), (SealState::Broken, head.seal));
    }

    fn other_cipher() -> crate::crypto::Cipher {
        crate::crypto::Cipher::from_base64(&crate::crypto::Cipher::generate_key()).unwrap()
    }
}
