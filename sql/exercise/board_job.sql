-- exercise/board_job.sql: LAB HELPER. One job's state as the board's
-- lease-extension and hand-back checks read it: status, attempts, fencing
-- token, and how far ahead its lease end and its run_at are, in seconds from
-- the clock now (clock_timestamp, so a check in autocommit reads the time of
-- this read, not of some earlier statement).
-- Safe: yes, read-only; a scratch database's row.
-- Parameters: id (bigint).

SELECT status, attempts, fence_token,
       extract(epoch FROM leased_until - clock_timestamp())::float AS lease_left_s,
       extract(epoch FROM run_at - clock_timestamp())::float AS wait_s
FROM jobs WHERE id = :id;
