-- lab/drop_full_index.sql: LAB HELPER. Remove the full index on
-- (status, run_at), so the table has only the course's own indexes again.
-- Safe: yes, in a lesson's database.
-- Parameters: none.

DROP INDEX IF EXISTS jobs_status_run_at_idx;
