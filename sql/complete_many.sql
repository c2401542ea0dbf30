-- complete_many.sql: mark a batch of claimed jobs done in one statement,
-- fenced row by row: each id counts only with the fencing token its claim
-- returned, so a stale worker's rows match nothing while the current
-- holder's rows in the same batch complete. Each row's finished_at is written
-- as in complete.sql.
-- Safe: yes. Locks its rows in id order (the ORDER BY sits under FOR UPDATE),
--   so two batches that share rows (a stale worker and the current holder)
--   wait for each other in one order and cannot deadlock.
-- Parameters: ids (bigint[]), fence_tokens (bigint[], the same length, in the
--   same order).

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
SET status = 'done', leased_until = NULL,
    finished_at = clock_timestamp()
FROM mine
WHERE jobs.id = mine.id
RETURNING jobs.id;
