-- teaching/lease_for_update.sql: TEACHING ONLY. The lease claim of claim.sql
-- without SKIP LOCKED, to measure what skipping buys. Workers queue behind
-- each other's row locks, but only for the length of the claim statement.
-- Safe: correct, but slower under contention; use claim.sql.
-- Parameters: batch (int), lease (interval).

WITH next AS (
  SELECT id FROM jobs
  WHERE status = 'ready' AND run_at BETWEEN '-infinity' AND now()
  ORDER BY run_at
  LIMIT :batch
  FOR UPDATE
)
UPDATE jobs
SET status = 'running',
    attempts = jobs.attempts + 1,
    fence_token = jobs.fence_token + 1,
    leased_until = now() + :'lease'::interval
FROM next
WHERE jobs.id = next.id
RETURNING jobs.id, jobs.kind, jobs.payload, jobs.attempts, jobs.max_attempts, jobs.leased_until,
          jobs.fence_token;
