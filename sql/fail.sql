-- fail.sql: record a failed try. The job goes back to ready with a wait of
-- 10 s x 2^attempts, capped at one hour, or to dead once attempts reaches
-- max_attempts. greatest() keeps that true if someone lowers max_attempts later.
-- The exponent is capped at 20 before power() runs: 10 s x 2^20 is already far
-- past the hour, and an uncapped 2^attempts overflows the interval from
-- attempts 40 on ("interval out of range"), which would leave the job running
-- until the reaper. A dead job is finished: finished_at is written as in
-- complete.sql (NULL for a job going back to ready, which has not finished).
-- Fenced on the claim's fencing token like complete.sql.
-- Safe: yes.
-- Parameters: id (bigint), fence_token (bigint), error (text).

UPDATE jobs
SET status = CASE WHEN attempts = greatest(attempts, max_attempts)
                  THEN 'dead' ELSE 'ready' END,
    run_at = now() + least(power(2, least(attempts, 20)) * interval '10 seconds',
                           interval '1 hour'),
    leased_until = NULL,
    finished_at = CASE WHEN attempts = greatest(attempts, max_attempts) THEN clock_timestamp() END,
    last_error = :'error'
WHERE id = :id AND status = 'running' AND fence_token = :fence_token
RETURNING status, run_at;
