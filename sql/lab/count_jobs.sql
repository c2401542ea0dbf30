-- lab/count_jobs.sql: LAB HELPER. How many jobs the table holds.
-- Safe: yes, read-only.
-- Parameters: none.

SELECT count(*) FROM jobs;
