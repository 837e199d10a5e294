-- Appending an audit event no longer waits for the chain's head (ferrozone_store's
-- postgres::audit). Until now every write transaction locked the one audit_head row from
-- its append to its commit, so writes in every process committed one disk flush at a time.
--
-- Now a write inserts its event *pending*: seq, prev_hash and hash NULL, and `pos` (append
-- order) from a sequence. A sealer then, in a transaction of its own holding the head row
-- (SELECT ... FOR UPDATE), reads the committed pending events in pos order, a batch at a
-- time, gives each the next seq and its hash, and moves the head. Sealers in several
-- processes take turns on the head; the second finds nothing pending. An event whose
-- transaction commits after a later one was sealed gets a later seq: seqs follow seal
-- order, with no gap, and a sealed seq is always larger than every one visible before, so
-- a reader following the log by seq (webhooks) misses nothing. Readers see sealed events
-- only (seq IS NOT NULL), and seal before they read.
--
-- Existing events keep their seq, which becomes their pos too.

ALTER TABLE audit_events
    DROP CONSTRAINT audit_events_pkey,
    ADD COLUMN pos bigint,
    ALTER COLUMN seq DROP NOT NULL,
    ALTER COLUMN prev_hash DROP NOT NULL,
    ALTER COLUMN hash DROP NOT NULL;

UPDATE audit_events SET pos = seq;

CREATE SEQUENCE audit_events_pos_seq OWNED BY audit_events.pos;
SELECT setval('audit_events_pos_seq', GREATEST((SELECT max(pos) FROM audit_events), 1),
              (SELECT max(pos) FROM audit_events) IS NOT NULL);

ALTER TABLE audit_events
    ALTER COLUMN pos SET DEFAULT nextval('audit_events_pos_seq'),
    ALTER COLUMN pos SET NOT NULL,
    ADD CONSTRAINT audit_events_pkey PRIMARY KEY (pos);

-- Sealed reads by seq (NULLs, the pending events, do not collide); the (..., seq) indexes
-- of 0016 still serve the filtered reads.
CREATE UNIQUE INDEX audit_events_seq ON audit_events (seq);

-- The sealer's look for pending events: empty, and so one cheap probe, when all are sealed.
CREATE INDEX audit_events_pending ON audit_events (pos) WHERE seq IS NULL;
