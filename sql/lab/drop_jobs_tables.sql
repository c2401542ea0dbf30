-- lab/drop_jobs_tables.sql: LAB HELPER. Drop the jobs and job_kinds tables, so a
-- test can put an older shape of jobs in their place and show schema.sql
-- upgrading it.
-- Safe: NO outside a test's own database: it drops every job.
-- Parameters: none.

DROP TABLE jobs, job_kinds;
