-- exercise/stage_status.sql: LAB HELPER. Move one job to a status as a worker
-- would leave it: running with a minute's lease, or done (or dead) with its
-- finished_at written and no lease; ready with no lease. The unique-enqueue
-- check uses it to make a key's job running, then done.
-- Safe: only in a scratch database: it rewrites a job's state by hand.
-- Parameters: id (bigint), status (text).

UPDATE jobs
SET status = :'status',
    leased_until = CASE WHEN :'status' = 'running' THEN now() + interval '1 minute' END,
    finished_at = CASE WHEN :'status' IN ('done', 'dead') THEN now() END
WHERE id = :id
RETURNING id;
