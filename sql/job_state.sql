-- job_state.sql: one job's status and attempts. The library reads it after a
-- fenced statement touched no row, to tell "fenced out" from a wrong call.
-- Safe: yes, read-only.
-- Parameters: id (bigint).

SELECT status, attempts FROM jobs WHERE id = :id;
