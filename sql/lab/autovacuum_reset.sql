-- lab/autovacuum_reset.sql: LAB HELPER. Give the jobs table back to
-- autovacuum after lab/autovacuum_off.sql.
-- Safe: yes.
-- Parameters: none.

ALTER TABLE jobs RESET (autovacuum_enabled);
