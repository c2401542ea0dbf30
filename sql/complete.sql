-- complete.sql: mark a claimed job done, fenced on the claim's fencing token.
-- A worker whose lease expired and whose job was claimed again (or reaped,
-- requeued and claimed again) holds an older token, so its completion matches
-- no row. Nothing resets the token, so it never repeats while no committed
-- claim is lost; a failover to a replica that missed the last claims lets the
-- next claim take a stale worker's token again (docs/speed.md). finished_at is
-- the moment the statement runs (clock_timestamp(), as the claim's lease), not
-- the start of a caller's transaction that may have done the job's work.
-- Safe: yes.
-- Parameters: id (bigint), fence_token (bigint, the value the claim returned).

UPDATE jobs
SET status = 'done', leased_until = NULL,
    finished_at = clock_timestamp()
WHERE id = :id AND status = 'running' AND fence_token = :fence_token
RETURNING id;
