//! The audit log's statements, shared by both backends ([`ferrozone_domain::audit`]).

use ferrozone_domain::audit::{AuditHead, AuditQuery};
use uuid::Uuid;

const COLUMNS: &str = "seq, id, at, actor_kind, actor_id, actor_user_id, action, subject_kind, subject_id, \
                       changes, client_address, request_id, prev_hash, hash";

pub(crate) const INSERT_EVENT: &str = "INSERT INTO audit_events (seq, id, at, actor_kind, actor_id, actor_user_id, \
     action, subject_kind, subject_id, changes, client_address, request_id, prev_hash, hash) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)";

pub(crate) const HEAD: &str = "SELECT last_seq, last_hash, pruned_seq, pruned_hash, seal FROM audit_head WHERE id = 1";

/// Every move of the head writes all of it, with its seal ([`AuditHead::moved_to`]).
pub(crate) const WRITE_HEAD: &str = "UPDATE audit_head SET last_seq = $1, last_hash = $2, pruned_seq = $3, \
     pruned_hash = $4, seal = $5 WHERE id = 1";

/// Retention's candidates: the oldest kept events, a batch at most ($1), in seq order.
/// Sealed ones only: a pending event (PostgreSQL) has no seq yet.
pub(crate) const OLDEST: &str =
    "SELECT seq, at, hash FROM audit_events WHERE seq IS NOT NULL ORDER BY seq ASC LIMIT $1";

pub(crate) const DELETE_THROUGH: &str = "DELETE FROM audit_events WHERE seq <= $1";

/// One of [`OLDEST`]'s rows: an event's seq, time (micros) and hash.
pub(crate) type Oldest = (i64, i64, Vec<u8>);

/// The last event retention removes from `oldest` (in seq order): the end of the run of
/// events older than `before_micros` that starts the log. Removal stops at the first newer
/// event, even when older ones follow it (their times need not follow commit order), so
/// the kept events always continue the chain from the head's `pruned_seq`.
pub(crate) fn prune_end(oldest: &[Oldest], before_micros: i64) -> Option<&Oldest> {
    oldest.iter().take_while(|(_, at, _)| *at < before_micros).last()
}

/// A stored hash; one of another length (an edited head) reads as zeros, which no chain
/// ends with, so verification reports it.
pub(crate) fn hash32(bytes: Vec<u8>) -> [u8; 32] {
    bytes.try_into().unwrap_or([0; 32])
}

/// The columns [`WRITE_HEAD`] binds, in `$n` order.
pub(crate) fn head_columns(head: &AuditHead) -> (i64, Vec<u8>, i64, Vec<u8>, Option<Vec<u8>>) {
    (head.last_seq, head.last_hash.to_vec(), head.pruned_seq, head.pruned_hash.to_vec(), head.seal.map(Vec::from))
}

/// A value bound to a `$n` of [`select`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Param {
    Int(i64),
    Text(String),
    Uuid(Uuid),
}

/// The select of `query`: its SQL and its parameters, in `$n` order.
pub(crate) fn select(query: &AuditQuery) -> (String, Vec<Param>) {
    let mut conditions = Vec::new();
    let mut params = Vec::new();
    if query.after_seq.is_none() && query.before_seq.is_none() {
        // Sealed events only (a seq cursor implies it): a pending one (PostgreSQL) has none.
        conditions.push("seq IS NOT NULL".to_owned());
    }
    let mut bind = |condition: &str, param: Param| {
        params.push(param);
        conditions.push(condition.replace('?', &format!("${}", params.len())));
    };
    let ascending = query.after_seq.is_some();
    if let Some(after) = query.after_seq {
        bind("seq > ?", Param::Int(after));
    } else if let Some(before) = query.before_seq {
        bind("seq < ?", Param::Int(before));
    }
    if let Some(kind) = query.actor_kind {
        bind("actor_kind = ?", Param::Text(kind.as_str().to_owned()));
    }
    if let Some(id) = &query.actor_id {
        bind("actor_id = ?", Param::Text(id.clone()));
    }
    if let Some(user) = query.actor_user_id {
        bind("actor_user_id = ?", Param::Uuid(user));
    }
    if let Some(kind) = &query.subject_kind {
        bind("subject_kind = ?", Param::Text(kind.clone()));
    }
    if let Some(id) = &query.subject_id {
        bind("subject_id = ?", Param::Text(id.clone()));
    }
    match query.action.as_deref() {
        // A prefix (`device.`): a range on the action index, no LIKE and its escapes.
        Some(prefix) if prefix.ends_with('.') => {
            bind("action >= ?", Param::Text(prefix.to_owned()));
            bind("action < ?", Param::Text(format!("{}/", &prefix[..prefix.len() - 1])));
        }
        Some(action) => bind("action = ?", Param::Text(action.to_owned())),
        None => {}
    }
    if let Some(since) = query.since {
        bind("at >= ?", Param::Int(since.micros()));
    }
    if let Some(until) = query.until {
        bind("at < ?", Param::Int(until.micros()));
    }
    let filter = if conditions.is_empty() { String::new() } else { format!(" WHERE {}", conditions.join(" AND ")) };
    let order = if ascending { "ASC" } else { "DESC" };
    params.push(Param::Int(i64::from(query.limit)));
    let sql = format!("SELECT {COLUMNS} FROM audit_events{filter} ORDER BY seq {order} LIMIT ${}", params.len());
    (sql, params)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_action_prefix_is_a_range_and_after_reads_oldest_first() {
        let query = AuditQuery {
            after_seq: Some(7),
            before_seq: Some(100),
            action: Some("device.".into()),
            limit: 10,
            ..AuditQuery::default()
        };
        let (sql, params) = select(&query);
        assert!(sql.ends_with("WHERE seq > $1 AND action >= $2 AND action < $3 ORDER BY seq ASC LIMIT $4"), "{sql}");
        assert_eq!(
            params,
            [Param::Int(7), Param::Text("device.".into()), Param::Text("device/".into()), Param::Int(10)]
        );
    }

    #[test]
    fn pruning_stops_at_the_first_event_to_keep() {
        let oldest = [(1, 10, vec![1]), (2, 30, vec![2]), (3, 20, vec![3])];
        assert_eq!(prune_end(&oldest, 25), Some(&oldest[0]));
        assert_eq!(prune_end(&oldest, 31), Some(&oldest[2]));
        assert_eq!(prune_end(&oldest, 10), None);
        assert_eq!(prune_end(&[], 10), None);
    }

    #[test]
    fn without_filters_the_newest_come_first() {
        let (sql, params) = select(&AuditQuery { limit: 5, ..AuditQuery::default() });
        assert!(sql.ends_with("FROM audit_events WHERE seq IS NOT NULL ORDER BY seq DESC LIMIT $1"), "{sql}");
        assert_eq!(params, [Param::Int(5)]);
    }
}
