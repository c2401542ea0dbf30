-- lab/retry_wait.sql: LAB HELPER. One job after a failure: its status,
-- attempts, last error, and the seconds until it is due again.
-- Safe: yes, read-only.
-- Parameters: id (bigint).

SELECT status, attempts, last_error, extract(epoch FROM run_at - now())::float8 AS wait_s
FROM jobs WHERE id = :id;
