-- reap.sql: the reaper. Running jobs whose lease has passed go back to ready,
-- or to dead if they have used all their attempts (a dead job's finished_at
-- written, as fail.sql does). Uses jobs_running_idx.
-- Safe: yes. Run it every minute, or from each worker before it claims.
--   It skips rows another transaction has locked: such a row is being
--   completed or failed right now (or reaped by another worker), and if that
--   transaction rolls back, the next run finds it. Skipping also means the
--   reaper never waits on a batch completion, so the two cannot deadlock
--   whatever order each meets the rows in.
-- Parameters: none.

WITH expired AS (
  SELECT id FROM jobs
  WHERE status = 'running' AND leased_until BETWEEN '-infinity' AND now()
  FOR UPDATE SKIP LOCKED
)
UPDATE jobs
SET status = CASE WHEN attempts = greatest(attempts, max_attempts)
                  THEN 'dead' ELSE 'ready' END,
    leased_until = NULL,
    finished_at = CASE WHEN attempts = greatest(attempts, max_attempts) THEN clock_timestamp() END,
    last_error = 'lease expired'
FROM expired
WHERE jobs.id = expired.id
RETURNING jobs.id, jobs.status;
