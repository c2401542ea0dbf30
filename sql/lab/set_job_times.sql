-- lab/set_job_times.sql: LAB HELPER. Put one job into a state with the times
-- a run would have given it, seconds before now(): so a test of the per-kind
-- stats (stats_kinds.sql) knows every wait and age it should read. NULL
-- leaves a time unset (attempted_at, finished_at).
-- Safe: only in a test's own database.
-- Parameters: id (bigint), status (text), attempts (int),
--   enqueued_s_ago (float8), attempted_s_ago (float8 or NULL),
--   finished_s_ago (float8 or NULL), run_at_s_ago (float8).

UPDATE jobs
SET status = :'status', attempts = :'attempts',
    enqueued_at = now() - make_interval(secs => :'enqueued_s_ago'),
    attempted_at = now() - make_interval(secs => :'attempted_s_ago'),
    finished_at = now() - make_interval(secs => :'finished_s_ago'),
    run_at = now() - make_interval(secs => :'run_at_s_ago'),
    leased_until = CASE WHEN :'status' = 'running' THEN now() + interval '5 minutes' END
WHERE id = :id
RETURNING id;
