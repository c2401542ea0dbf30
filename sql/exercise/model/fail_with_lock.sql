-- exercise/model/fail_with_lock.sql: a right answer to lesson 06's exercise,
-- led by a WITH query: it picks and locks the job's row only while this
-- worker holds the claim, then sets the backoff or dead. Used by the lesson 06
-- checker's tests.
-- Safe: yes.
-- Parameters: id (bigint), fence_token (bigint), error (text).

WITH mine AS (
  SELECT id FROM jobs
  WHERE id = :id AND status = 'running' AND fence_token = :fence_token
  FOR UPDATE
)
UPDATE jobs
SET status = CASE WHEN attempts = greatest(attempts, max_attempts)
                  THEN 'dead' ELSE 'ready' END,
    run_at = now() + least(power(2, least(attempts, 20)) * interval '10 seconds',
                           interval '1 hour'),
    leased_until = NULL,
    last_error = :'error'
FROM mine
WHERE jobs.id = mine.id
RETURNING jobs.status, jobs.run_at;
