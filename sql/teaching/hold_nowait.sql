-- teaching/hold_nowait.sql: TEACHING ONLY. The hold-the-transaction claim with
-- FOR UPDATE NOWAIT: run after BEGIN; the row stays locked until COMMIT or ROLLBACK,
-- and the worker does its job inside that transaction.
-- Fast but noisy: a second session fails at once with SQLSTATE 55P03 and must retry.
-- Safe: correct, but a held transaction blocks VACUUM for the whole job;
--   prefer claim.sql with a lease.
-- Parameters: none.

SELECT id FROM jobs
WHERE status = 'ready' AND run_at BETWEEN '-infinity' AND now()
ORDER BY run_at
LIMIT 1
FOR UPDATE NOWAIT;
