-- fail_many_by_kind_relaxed.sql: fail_many_by_kind.sql whose own commit does
-- not wait for the disk, in one statement, as fail_many_relaxed.sql is to
-- fail_many.sql (complete_many_relaxed.sql says why that is safe for
-- completions and failures only).
-- Safe: yes, sent on its own (autocommit); inside a caller's transaction or
--   pipeline it would relax the caller's commit too, so the library sends
--   fail_many_by_kind.sql there. Locks its rows in id order.
-- Parameters: ids (bigint[]), fence_tokens (bigint[]), errors (text[]), all
--   the same length, in the same order.

WITH relaxed AS (
  SELECT set_config('synchronous_commit', 'off', true) AS synchronous_commit
), mine AS (
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
FROM mine, relaxed
WHERE jobs.id = mine.id
RETURNING jobs.id, jobs.status;
