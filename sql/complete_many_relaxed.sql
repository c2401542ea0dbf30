-- complete_many_relaxed.sql: complete_many.sql whose own commit does not wait
-- for the disk, in one statement and so one round trip. set_config(..., true)
-- lasts until the end of the transaction it runs in, and a statement sent
-- outside a transaction block is its own transaction, so the setting covers
-- exactly this statement's commit and is gone after it. The other way, BEGIN,
-- SET LOCAL synchronous_commit = off, the UPDATE and COMMIT, costs four round
-- trips for the same commit.
-- Safe: yes, sent on its own (autocommit); inside a caller's transaction, or
--   a caller's pipeline (its statements up to the Sync share one implicit
--   transaction), it would relax the caller's commit too, so the library sends
--   complete_many.sql there. A server crash in the next moment (about 3 x wal_writer_delay,
--   600 ms by default) may lose the completion, never corrupt the database or
--   expose half a transaction: the job is still running, the reaper returns it
--   after its lease and it runs again, which an at-least-once queue allows.
--   Only completions and failures may be relaxed: never a claim (a lost claim
--   would hand out its fencing token again) or an enqueue (a lost job).
-- Parameters: ids (bigint[]), fence_tokens (bigint[], the same length, in the
--   same order).

WITH relaxed AS (
  SELECT set_config('synchronous_commit', 'off', true) AS synchronous_commit
), mine AS (
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
FROM mine, relaxed
WHERE jobs.id = mine.id
RETURNING jobs.id;
