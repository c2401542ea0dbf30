-- exercise/wrong/claim_locks_only.sql: TEACHING ONLY, WRONG. A claim that
-- locks the oldest due jobs, skipping locked ones, and marks nothing: the lock
-- ends with the claim's transaction, and the jobs are still ready, so the next
-- claim takes them again. The claim checks' tests use it.
-- Safe: read-only, but every job it returns is handed out again.
-- Parameters: batch (int).

SELECT id FROM jobs
WHERE status = 'ready' AND run_at BETWEEN '-infinity' AND now()
ORDER BY run_at
LIMIT :batch
FOR UPDATE SKIP LOCKED;
