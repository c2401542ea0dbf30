-- teaching/hold_skip_locked.sql: TEACHING ONLY. The hold-the-transaction claim with
-- FOR UPDATE SKIP LOCKED: run after BEGIN; the row stays locked until COMMIT or ROLLBACK,
-- and the worker does its job inside that transaction.
-- A second session takes the next unlocked job at once.
-- Safe: correct, but a held transaction blocks VACUUM for the whole job;
--   prefer claim.sql with a lease.
-- Parameters: none.

SELECT id FROM jobs
WHERE status = 'ready' AND run_at BETWEEN '-infinity' AND now()
ORDER BY run_at
LIMIT 1
FOR UPDATE SKIP LOCKED;
