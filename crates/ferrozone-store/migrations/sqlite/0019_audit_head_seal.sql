-- The chain's head is sealed (ferrozone_domain::audit::head): `seal` is an HMAC, under the
-- chain's key, of last_seq, last_hash, pruned_seq and pruned_hash, written with every move
-- of the head, so that someone who can write the database but has no key cannot move the
-- pruned mark or the last event. NULL until the head next moves: a database from before
-- this step gets its seal with its next recorded event (docs/operations.md, "Verifying the
-- chain").
ALTER TABLE audit_head ADD COLUMN seal BLOB;
