-- requeue_dead.sql: put dead jobs back once their cause is fixed.
-- Safe: yes, but it is a human decision: read last_error first. It resets
--   attempts (the retry count) and never fence_token, so a worker still
--   holding a claim from before the requeue stays fenced out. It clears
--   finished_at (the job is not finished any more) and keeps enqueued_at, so
--   the enqueue-to-done time of a requeued job counts its time dead.
-- Parameters: kind (text, NULL = every kind).

UPDATE jobs
SET status = 'ready', attempts = 0, run_at = now(), last_error = NULL,
    finished_at = NULL
WHERE status = 'dead' AND (:'kind'::text IS NULL OR kind = :'kind')
RETURNING id;
