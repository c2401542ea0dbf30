-- exercise/wrong/fail_uncapped.sql: TEACHING ONLY, WRONG. The guide's failure
-- statement, fenced on fence_token: right waits and right dead rule, but
-- power(2, attempts) overflows double precision for large attempt counts, so
-- a job with a high max_attempts makes the statement fail instead of backing
-- off. Lesson 06's seeded attempt.
-- Safe: NO for large attempt counts; cap the exponent.
-- Parameters: id (bigint), fence_token (bigint), error (text).

UPDATE jobs
SET status = CASE WHEN attempts = greatest(attempts, max_attempts)
                  THEN 'dead' ELSE 'ready' END,
    run_at = now() + least(power(2, attempts) * interval '10 seconds',
                           interval '1 hour'),
    leased_until = NULL,
    last_error = :'error'
WHERE id = :id AND status = 'running' AND fence_token = :fence_token
RETURNING status, run_at;
