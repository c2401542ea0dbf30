-- exercise/wrong/reap_early.sql: TEACHING ONLY, WRONG. A reaper that takes
-- leases with under 25 s left as well as those that ran out, "to be safe". A
-- worker still inside its lease loses the job it is running: a second worker
-- claims it and runs it again. Used by the lesson 04 checker's tests.
-- Safe: NO. A lease belongs to its worker until leased_until has passed.
-- Parameters: none.

WITH expired AS (
  SELECT id FROM jobs
  WHERE status = 'running' AND leased_until BETWEEN '-infinity' AND now() + interval '25 seconds'
  FOR UPDATE SKIP LOCKED
)
UPDATE jobs
SET status = CASE WHEN attempts = greatest(attempts, max_attempts)
                  THEN 'dead' ELSE 'ready' END,
    leased_until = NULL,
    last_error = 'lease expired'
FROM expired
WHERE jobs.id = expired.id
RETURNING jobs.id, jobs.status;
