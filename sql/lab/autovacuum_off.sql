-- lab/autovacuum_off.sql: LAB HELPER. Stop autovacuum cleaning jobs by itself,
-- so a lesson decides when VACUUM runs and every learner measures the same
-- thing. Never do this in production: there autovacuum should run often.
-- Safe: yes, in a lesson's database.
-- Parameters: none.

ALTER TABLE jobs SET (autovacuum_enabled = off);
