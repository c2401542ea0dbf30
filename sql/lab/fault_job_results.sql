-- lab/fault_job_results.sql: LAB HELPER. Each job's number n (from its
-- payload), final status, attempts used, max_attempts and last_error, to
-- compare with the failures a load run planned.
-- Safe: yes, read-only.
-- Parameters: none.

SELECT (payload ->> 'n')::int AS n, status, attempts, max_attempts, last_error
FROM jobs ORDER BY id;
