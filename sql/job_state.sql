-- job_state.sql: one job's status, attempts, fencing token and last error. The library
-- reads it after a fenced statement touched no row, to tell "fenced out" from
-- a wrong call, and a Worker reads it to tell whether a completion or a failure
-- it sent as its connection broke had committed (done, with its claim's token;
-- or ready or dead, with its claim's token and attempts, and its error).
-- Safe: yes, read-only.
-- Parameters: id (bigint).

SELECT status, attempts, fence_token, last_error FROM jobs WHERE id = :id;
