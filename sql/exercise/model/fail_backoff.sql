-- exercise/model/fail_backoff.sql: the model answer to lesson 06's "fail with
-- backoff": back to ready after 10 s x 2^attempts, capped at one hour, or dead
-- once attempts reaches max_attempts (greatest() keeps that true after
-- max_attempts is lowered). The exponent is capped first: power(2, attempts)
-- overflows double precision past 2^1023, and 2^9 x 10 s is already over the hour.
-- Safe: yes. Fenced on fence_token, like complete.
-- Parameters: id (bigint), fence_token (bigint), error (text).

UPDATE jobs
SET status = CASE WHEN attempts = greatest(attempts, max_attempts)
                  THEN 'dead' ELSE 'ready' END,
    run_at = now() + least(power(2, least(attempts, 16)) * interval '10 seconds',
                           interval '1 hour'),
    leased_until = NULL,
    last_error = :'error'
WHERE id = :id AND status = 'running' AND fence_token = :fence_token
RETURNING status, run_at;
