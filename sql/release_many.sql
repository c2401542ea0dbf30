-- release_many.sql: hand claimed jobs back unsent, without spending a try:
-- the broker did not answer, which is not the job's fault. Each goes back to
-- ready as it was (its run_at unchanged, so it keeps its place in line) with
-- its attempt given back, fenced row by row like complete_many.sql.
-- Safe: yes. Locks its rows in id order, as complete_many.sql does.
-- Parameters: ids (bigint[]), fence_tokens (bigint[], the same length, in the
--   same order), error (text).

WITH mine AS (
  SELECT jobs.id
  FROM jobs
  JOIN unnest(:'ids'::bigint[], :'fence_tokens'::bigint[]) AS claimed (id, fence_token)
    ON jobs.id = claimed.id AND jobs.fence_token = claimed.fence_token
  WHERE jobs.status = 'running'
  ORDER BY jobs.id
  FOR UPDATE OF jobs
)
UPDATE jobs
SET status = 'ready', attempts = greatest(jobs.attempts - 1, 0), leased_until = NULL,
    last_error = :'error'
FROM mine
WHERE jobs.id = mine.id
RETURNING jobs.id;
