-- requeue_dead.sql: put dead jobs back once their cause is fixed.
-- Safe: yes, but it is a human decision: read last_error first. It resets
--   attempts (the retry count) and never fence_token, so a worker still
--   holding a claim from before the requeue stays fenced out. It clears
--   finished_at (the job is not finished any more) and keeps enqueued_at, so
--   the enqueue-to-done time of a requeued job counts its time dead.
-- Unique keys: a dead job frees its key, so a new job may hold it now. Such a
--   dead job stays dead (the live one does the work), and of several dead
--   jobs with one key only the newest comes back: either would break the
--   unique index, and the one statement would requeue nothing. A job without
--   a key skips both lookups. An enqueue of the same key that commits while
--   this runs still makes it fail (unique_violation): queue.requeue_dead
--   runs it again. Cost: one more pass over the dead jobs and one over the
--   live ones, each hashed once; on 200,000 jobs (20,000 dead holding 4,000
--   keys, 4,000 requeued) 61,400 buffers on PostgreSQL 18.6 and 15.18 alike,
--   most of them the 4,000 updates and their index entries.
-- Parameters: kind (text, NULL = every kind).

WITH newest AS (  -- per kind and key, the dead job that may come back
  SELECT DISTINCT ON (kind, unique_key) id
  FROM jobs
  WHERE status = 'dead' AND unique_key IS NOT NULL AND (:'kind'::text IS NULL OR kind = :'kind')
  ORDER BY kind, unique_key, id DESC
)
UPDATE jobs
SET status = 'ready', attempts = 0, run_at = now(), last_error = NULL,
    finished_at = NULL
WHERE status = 'dead' AND (:'kind'::text IS NULL OR kind = :'kind')
  AND (unique_key IS NULL
       OR (id IN (SELECT id FROM newest)
           AND NOT EXISTS (SELECT 1 FROM jobs live
                           WHERE live.kind = jobs.kind AND live.unique_key = jobs.unique_key
                             AND live.status IN ('ready', 'running'))))
RETURNING id;
