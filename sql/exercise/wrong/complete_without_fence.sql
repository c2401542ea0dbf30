-- exercise/wrong/complete_without_fence.sql: TEACHING ONLY, WRONG. Completion
-- with no fence at all: any worker that ever claimed the job can mark it done,
-- so a stalled worker whose lease ran out finishes the claim of the worker that
-- took the job after it, while that worker is still running it.
-- Safe: NO, a stale worker completes someone else's claim; use complete.sql.
-- Parameters: id (bigint).

UPDATE jobs
SET status = 'done', leased_until = NULL,
    finished_at = clock_timestamp()
WHERE id = :id AND status = 'running'
RETURNING id;
