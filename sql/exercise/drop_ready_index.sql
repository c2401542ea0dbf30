-- exercise/drop_ready_index.sql: LAB HELPER. Remove the course's ready index
-- from a scratch jobs table, so the index the learner writes is the one the
-- claim can use.
-- Safe: only in a scratch database.
-- Parameters: none.

DROP INDEX IF EXISTS jobs_ready_idx;
