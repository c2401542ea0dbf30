-- exercise/stage_run_at.sql: LAB HELPER. Set when one job falls due, seconds
-- from now (negative: due that long ago; positive: not due yet), so a check
-- can stage jobs whose age order differs from their id order and jobs that
-- must not be claimed yet.
-- Safe: only in a scratch database: it rewrites a job's run_at by hand.
-- Parameters: id (bigint), run_in_s (float, seconds from now).

UPDATE jobs SET run_at = now() + :run_in_s * interval '1 second' WHERE id = :id;
