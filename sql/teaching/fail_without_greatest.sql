-- teaching/fail_without_greatest.sql: TEACHING ONLY. fail.sql with the dead
-- test written as attempts = max_attempts. Once someone lowers max_attempts
-- below a job's attempts, the two are never equal again and the job retries
-- for ever. Compare fail.sql, whose greatest() test catches it.
-- Safe: NO, wrong on purpose; lesson 06 runs it to show the loop.
-- Parameters: id (bigint), fence_token (bigint), error (text).

UPDATE jobs
SET status = CASE WHEN attempts = max_attempts THEN 'dead' ELSE 'ready' END,
    run_at = now() + least(power(2, least(attempts, 20)) * interval '10 seconds',
                           interval '1 hour'),
    leased_until = NULL,
    last_error = :'error'
WHERE id = :id AND status = 'running' AND fence_token = :fence_token
RETURNING status, run_at;
