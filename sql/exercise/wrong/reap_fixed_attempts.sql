-- exercise/wrong/reap_fixed_attempts.sql: TEACHING ONLY, WRONG. A reaper that
-- finds expired leases through the partial index, as it should, but decides
-- "dead" by a number written into the statement (attempts >= 5) instead of
-- each job's own max_attempts: a job allowed 3 tries is retried for ever past
-- them, and a job allowed 10 goes dead after 5. Used by the lesson 04
-- checker's tests.
-- Safe: NO. Shown because it is wrong; compare with the max_attempts column.
-- Parameters: none.

UPDATE jobs
SET status = CASE WHEN attempts >= 5 THEN 'dead' ELSE 'ready' END,
    leased_until = NULL,
    last_error = 'lease expired'
WHERE status = 'running' AND leased_until BETWEEN '-infinity' AND now()
RETURNING id, status;
