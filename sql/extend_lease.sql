-- extend_lease.sql: a heartbeat for a long job. Pushes the lease forward, but
-- only while this worker still holds the claim (fenced on its fencing token).
-- Safe: yes.
-- Parameters: id (bigint), fence_token (bigint), lease (interval from the
--   moment the statement runs: clock_timestamp(), not the transaction's start).

UPDATE jobs
SET leased_until = clock_timestamp() + :'lease'::interval
WHERE id = :id AND status = 'running' AND fence_token = :fence_token
RETURNING leased_until;
