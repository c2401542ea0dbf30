-- requeue_dead.sql: put dead jobs back once their cause is fixed.
-- Safe: yes, but it is a human decision: read last_error first.
-- Parameters: kind (text, NULL = every kind).

UPDATE jobs
SET status = 'ready', attempts = 0, run_at = now(), last_error = NULL
WHERE status = 'dead' AND (:'kind'::text IS NULL OR kind = :'kind')
RETURNING id;
