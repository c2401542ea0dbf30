-- reap.sql: the reaper. Running jobs whose lease has passed go back to ready,
-- or to dead if they have used all their attempts. Uses jobs_running_idx.
-- Safe: yes. Run it every minute, or from each worker before it claims.
-- Parameters: none.

UPDATE jobs
SET status = CASE WHEN attempts = greatest(attempts, max_attempts)
                  THEN 'dead' ELSE 'ready' END,
    leased_until = NULL,
    last_error = 'lease expired'
WHERE status = 'running'
  AND leased_until BETWEEN '-infinity' AND now()
RETURNING id, status;
