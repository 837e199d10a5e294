-- Who disabled a user (docs/api.md section 8, "Users and admins"): `admin`, `cli` or
-- `identity_provider`, with the provider's id for the last. Set and cleared with
-- `disabled_at`. Users disabled before this migration keep NULL: who disabled them was
-- never recorded, and guessing would send an operator to the wrong fix.
ALTER TABLE users ADD COLUMN disabled_by text;
ALTER TABLE users ADD COLUMN disabled_by_provider text;
