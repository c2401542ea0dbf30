-- admin/jobs_options.sql: the jobs table's own storage settings (ALTER TABLE
-- jobs SET (...)), NULL when it has none: what the tests read to see whether
-- a reused database kept a setting a test made.
-- Safe: yes, read-only. Used by tests only.
-- Parameters: none.

SELECT reloptions FROM pg_class WHERE oid = 'jobs'::regclass;
