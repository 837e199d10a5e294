-- The audit log (ferrozone_domain::audit). Mirrors migrations/postgres/0016_audit_events.sql.
-- Each event is appended in the transaction of the change it records. `seq` is assigned
-- from audit_head, whose one row every appender updates, so seqs follow commit order with
-- no gap. `hash` is the MAC of `prev_hash` and the other columns, as stored (EventRecord).

CREATE TABLE audit_events (
    seq            INTEGER NOT NULL PRIMARY KEY,
    id             BLOB    NOT NULL,
    at             INTEGER NOT NULL,
    actor_kind     TEXT    NOT NULL,
    actor_id       TEXT,
    actor_user_id  BLOB,
    action         TEXT    NOT NULL,
    subject_kind   TEXT    NOT NULL,
    subject_id     TEXT,
    -- the changes, a JSON array
    changes        TEXT    NOT NULL,
    client_address TEXT,
    request_id     TEXT,
    prev_hash      BLOB    NOT NULL,
    hash           BLOB    NOT NULL,
    CONSTRAINT audit_events_id_unique UNIQUE (id)
) STRICT;

-- The filters of GET /v0/audit_events, each newest first by seq; and retention, by time.
CREATE INDEX audit_events_at ON audit_events (at);
CREATE INDEX audit_events_actor_user ON audit_events (actor_user_id, seq) WHERE actor_user_id IS NOT NULL;
CREATE INDEX audit_events_actor ON audit_events (actor_kind, actor_id, seq);
CREATE INDEX audit_events_subject ON audit_events (subject_kind, subject_id, seq);
CREATE INDEX audit_events_action ON audit_events (action, seq);

-- The chain's head: the last event appended, and the last one retention removed (the
-- `prev_hash` of the first event kept). One row.
CREATE TABLE audit_head (
    id          INTEGER NOT NULL PRIMARY KEY CHECK (id = 1),
    last_seq    INTEGER NOT NULL,
    last_hash   BLOB    NOT NULL,
    pruned_seq  INTEGER NOT NULL,
    pruned_hash BLOB    NOT NULL
) STRICT;

INSERT INTO audit_head (id, last_seq, last_hash, pruned_seq, pruned_hash)
VALUES (1, 0, zeroblob(32), 0, zeroblob(32));
