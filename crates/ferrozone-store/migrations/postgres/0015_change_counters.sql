-- Mirrors SQLite's 0015_change_counters, which counts the changes that PostgreSQL's
-- triggers of 0003, 0008 and 0009 announce with NOTIFY. PostgreSQL needs no counters.
-- This migration changes nothing; it keeps both histories at the same version.
SELECT 1;
