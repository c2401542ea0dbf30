-- teaching/hold_for_update.sql: TEACHING ONLY. The hold-the-transaction claim with
-- FOR UPDATE: run after BEGIN; the row stays locked until COMMIT or ROLLBACK,
-- and the worker does its job inside that transaction.
-- Correct but slow: a second session waits until the first one's transaction ends.
-- Safe: correct, but a held transaction blocks VACUUM for the whole job;
--   prefer claim.sql with a lease.
-- Parameters: none.

SELECT id FROM jobs
WHERE status = 'ready' AND run_at BETWEEN '-infinity' AND now()
ORDER BY run_at
LIMIT 1
FOR UPDATE;
