-- The audit log (ferrozone_domain::audit). Mirrors migrations/sqlite/0016_audit_events.sql.
-- Each event is appended in the transaction of the change it records. `seq` is assigned
-- from audit_head, whose one row every appender locks (SELECT ... FOR UPDATE) until it
-- commits, so seqs follow commit order with no gap, across processes. `hash` is the MAC of
-- `prev_hash` and the other columns, as stored (EventRecord).

CREATE TABLE audit_events (
    seq            bigint NOT NULL PRIMARY KEY,
    id             uuid   NOT NULL,
    at             bigint NOT NULL,
    actor_kind     text   NOT NULL,
    actor_id       text,
    actor_user_id  uuid,
    action         text   NOT NULL,
    subject_kind   text   NOT NULL,
    subject_id     text,
    -- the changes, a JSON array, as text: the MAC covers the stored bytes
    changes        text   NOT NULL,
    client_address text,
    request_id     text,
    prev_hash      bytea  NOT NULL,
    hash           bytea  NOT NULL,
    CONSTRAINT audit_events_id_unique UNIQUE (id)
);

CREATE INDEX audit_events_at ON audit_events (at);
CREATE INDEX audit_events_actor_user ON audit_events (actor_user_id, seq) WHERE actor_user_id IS NOT NULL;
CREATE INDEX audit_events_actor ON audit_events (actor_kind, actor_id, seq);
CREATE INDEX audit_events_subject ON audit_events (subject_kind, subject_id, seq);
CREATE INDEX audit_events_action ON audit_events (action, seq);

CREATE TABLE audit_head (
    id          integer NOT NULL PRIMARY KEY CHECK (id = 1),
    last_seq    bigint  NOT NULL,
    last_hash   bytea   NOT NULL,
    pruned_seq  bigint  NOT NULL,
    pruned_hash bytea   NOT NULL
);

INSERT INTO audit_head (id, last_seq, last_hash, pruned_seq, pruned_hash)
VALUES (1, 0, decode(repeat('00', 32), 'hex'), 0, decode(repeat('00', 32), 'hex'));
