-- lab/reset_jobs.sql: LAB HELPER. Empty the jobs table and restart its ids at
-- 1, so an experiment starts from a known state.
-- Safe: NO outside a lesson's own database: it deletes every job.
-- Parameters: none.

TRUNCATE jobs RESTART IDENTITY;
