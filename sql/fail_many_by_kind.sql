-- fail_many_by_kind.sql: fail_many.sql with each kind's retry policy: each
-- row waits its kind's backoff_base_s x 2^attempts, capped at its
-- backoff_cap_s (job_kinds), or fail.sql's 10 s and one hour for a kind with
-- no row (fail_by_kind.sql says how the wait is kept in range). Dead at
-- max_attempts, with finished_at written. Fenced row by row on the fencing token.
-- Safe: yes. Locks its rows in id order, like complete_many.sql.
-- Parameters: ids (bigint[]), fence_tokens (bigint[]), errors (text[]), all
--   the same length, in the same order.

WITH mine AS (
  SELECT jobs.id, failed.error,
         least(coalesce(k.backoff_base_s, 10) * power(2, least(jobs.attempts, 20)),
               coalesce(k.backoff_cap_s, 3600)) AS wait_s
  FROM jobs
  JOIN unnest(:'ids'::bigint[], :'fence_tokens'::bigint[], :'errors'::text[]) AS failed (id, fence_token, error)
    ON jobs.id = failed.id AND jobs.fence_token = failed.fence_token
  LEFT JOIN job_kinds k ON k.kind = jobs.kind
  WHERE jobs.status = 'running'
  ORDER BY jobs.id
  FOR UPDATE OF jobs
)
UPDATE jobs
SET status = CASE WHEN jobs.attempts = greatest(jobs.attempts, jobs.max_attempts)
                  THEN 'dead' ELSE 'ready' END,
    run_at = now() + make_interval(secs => mine.wait_s),
    leased_until = NULL,
    finished_at = CASE WHEN jobs.attempts = greatest(jobs.attempts, jobs.max_attempts)
                       THEN clock_timestamp() END,
    last_error = mine.error
FROM mine
WHERE jobs.id = mine.id
RETURNING jobs.id, jobs.status;
