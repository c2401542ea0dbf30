-- exercise/job_wait.sql: LAB HELPER. A job's status and how far ahead its
-- run_at is, in seconds, measured from the same now() as the statement just
-- run in this transaction.
-- Safe: yes, read-only.
-- Parameters: id (bigint).

SELECT status, extract(epoch FROM run_at - now())::float AS wait_s, leased_until, last_error
FROM jobs WHERE id = :id;
