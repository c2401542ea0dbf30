-- lab/try_drop_jobs.sql: LAB HELPER. Try to drop the jobs table; a worker role
-- must be refused (SQLSTATE 42501, must be owner of table jobs).
-- Safe: NO as the table's owner: it drops every job. Run it as a restricted role.
-- Parameters: none.

DROP TABLE jobs;
