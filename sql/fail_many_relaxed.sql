-- fail_many_relaxed.sql: fail_many.sql whose own commit does not wait for the
-- disk, in one statement and so one round trip, the same way as
-- complete_many_relaxed.sql (which says why that is safe for completions and
-- failures only): set_config(..., true) covers exactly this statement's commit
-- when it is sent on its own.
-- Safe: yes, sent on its own (autocommit); inside a caller's transaction, or
--   a caller's pipeline (its statements up to the Sync share one implicit
--   transaction), it would relax the caller's commit too, so the library sends
--   fail_many.sql there. Locks its rows in id order, like complete_many.sql.
-- Parameters: ids (bigint[]), fence_tokens (bigint[]), errors (text[]), all
--   the same length, in the same order.

WITH relaxed AS (
  SELECT set_config('synchronous_commit', 'off', true) AS synchronous_commit
), mine AS (
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
FROM mine, relaxed
WHERE jobs.id = mine.id
RETURNING jobs.id, jobs.status;
