-- fail_many.sql: record a batch of failed tries in one statement, each with
-- its own error. Like fail.sql per row: back to ready after 10 s x 2^attempts
-- (the exponent capped at 20, the wait at one hour), or dead once attempts
-- reaches max_attempts, with finished_at written on dead. Fenced row by row
-- on the fencing token.
-- Safe: yes. Locks its rows in id order, like complete_many.sql.
-- Parameters: ids (bigint[]), fence_tokens (bigint[]), errors (text[]), all
--   the same length, in the same order.

WITH mine AS (
  SELECT jobs.id, failed.error
  FROM jobs
  JOIN unnest(:'ids'::bigint[], :'fence_tokens'::bigint[], :'errors'::text[]) AS failed (id, fence_token, error)
    ON jobs.id = failed.id AND jobs.fence_token = failed.fence_token
  WHERE jobs.status = 'running'
  ORDER BY jobs.id
  FOR UPDATE OF jobs
)
UPDATE jobs
SET status = CASE WHEN jobs.attempts = greatest(jobs.attempts, jobs.max_attempts)
                  THEN 'dead' ELSE 'ready' END,
    run_at = now() + least(power(2, least(jobs.attempts, 20)) * interval '10 seconds',
                           interval '1 hour'),
    leased_until = NULL,
    finished_at = CASE WHEN jobs.attempts = greatest(jobs.attempts, jobs.max_attempts)
                       THEN clock_timestamp() END,
    last_error = mine.error
FROM mine
WHERE jobs.id = mine.id
RETURNING jobs.id, jobs.status;
