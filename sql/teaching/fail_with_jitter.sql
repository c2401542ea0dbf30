-- teaching/fail_with_jitter.sql: TEACHING ONLY. fail.sql with jitter: each
-- wait is scaled by a random factor from 0.75 to 1.25, so jobs that fail at
-- the same moment come due spread over a window instead of all at once.
-- Safe: yes, but the course's fail.sql keeps the guide's exact schedule;
--   lesson 06 says why.
-- Parameters: id (bigint), fence_token (bigint), error (text).

UPDATE jobs
SET status = CASE WHEN attempts = greatest(attempts, max_attempts)
                  THEN 'dead' ELSE 'ready' END,
    run_at = now() + least(power(2, least(attempts, 20)) * interval '10 seconds',
                           interval '1 hour') * (0.75 + random() * 0.5),
    leased_until = NULL,
    last_error = :'error'
WHERE id = :id AND status = 'running' AND fence_token = :fence_token
RETURNING status, run_at;
