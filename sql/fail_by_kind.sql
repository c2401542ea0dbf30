-- fail_by_kind.sql: record a failed try with the kind's retry policy. As
-- fail.sql, but the wait is the kind's backoff_base_s x 2^attempts, capped at
-- its backoff_cap_s (job_kinds); a kind with no row gets fail.sql's 10 s and
-- one hour. The wait is worked out in seconds (float8) and capped before it
-- becomes an interval, so no base, cap or attempt count overflows it; the
-- exponent is capped at 20 as in fail.sql. Dead at max_attempts, with
-- finished_at written, as in fail.sql. Fenced on the claim's fencing token.
-- Safe: yes. Reads the kind's row by its primary key.
-- Parameters: id (bigint), fence_token (bigint), error (text).

UPDATE jobs
SET status = CASE WHEN attempts = greatest(attempts, max_attempts)
                  THEN 'dead' ELSE 'ready' END,
    run_at = now() + make_interval(secs => least(
               coalesce((SELECT backoff_base_s FROM job_kinds WHERE kind = jobs.kind), 10)
                 * power(2, least(attempts, 20)),
               coalesce((SELECT backoff_cap_s FROM job_kinds WHERE kind = jobs.kind), 3600))),
    leased_until = NULL,
    finished_at = CASE WHEN attempts = greatest(attempts, max_attempts) THEN clock_timestamp() END,
    last_error = :'error'
WHERE id = :id AND status = 'running' AND fence_token = :fence_token
RETURNING status, run_at;
