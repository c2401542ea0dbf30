-- exercise/stage_job.sql: LAB HELPER. Put one job into a given state (status,
-- attempts, fencing token, lease seconds from now, max_attempts), so a check
-- can replay a story such as "A's lease ran out, B claimed the job again".
-- Safe: only in a scratch database: it rewrites a job's state by hand.
-- Parameters: id (bigint), status (text), attempts (int), fence_token (bigint),
--   lease_s (float, seconds from now; NULL for no lease), max_attempts (int).

UPDATE jobs
SET status = :'status', attempts = :attempts, fence_token = :fence_token,
    leased_until = now() + :lease_s * interval '1 second', max_attempts = :max_attempts
WHERE id = :id
RETURNING id;
