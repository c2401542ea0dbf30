-- exercise/wrong/reap_without_status.sql: TEACHING ONLY, WRONG. A reaper that
-- finds expired leases by leased_until alone. It picks the right rows (only
-- running jobs have a lease), but without status = 'running' the planner
-- cannot use the partial index jobs_running_idx, so it reads the whole table
-- every minute. Lesson 04's seeded attempt.
-- Safe: correct rows, but slow on a big table; use reap.sql.
-- Parameters: none.

UPDATE jobs
SET status = 'ready', leased_until = NULL, last_error = 'lease expired'
WHERE leased_until < now()
RETURNING id, status;
