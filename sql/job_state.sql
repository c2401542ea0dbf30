-- job_state.sql: one job's status, attempts and fencing token. The library
-- reads it after a fenced statement touched no row, to tell "fenced out" from
-- a wrong call, and a Worker reads it to tell whether a completion it sent as
-- its connection broke had committed (done, with its claim's token).
-- Safe: yes, read-only.
-- Parameters: id (bigint).

SELECT status, attempts, fence_token FROM jobs WHERE id = :id;
