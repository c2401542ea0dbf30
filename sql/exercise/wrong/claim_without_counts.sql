-- exercise/wrong/claim_without_counts.sql: TEACHING ONLY, WRONG. The claim,
-- locked and skipping, due and oldest first, with its lease, that neither
-- counts the attempt nor takes a new fencing token. The reaper's max_attempts
-- never trips, so a poison job is retried for ever, and a stale worker holds
-- the same token as the current one, so lesson 05's fence cannot tell them
-- apart. Used by the lesson 01 and 03 checkers' tests.
-- Safe: NO. attempts = jobs.attempts + 1, fence_token = jobs.fence_token + 1.
-- Parameters: batch (int), lease (interval).

WITH next AS (
  SELECT id FROM jobs
  WHERE status = 'ready' AND run_at BETWEEN '-infinity' AND now()
  ORDER BY run_at
  LIMIT :batch
  FOR UPDATE SKIP LOCKED
)
UPDATE jobs
SET status = 'running',
    leased_until = clock_timestamp() + :'lease'::interval
FROM next
WHERE jobs.id = next.id
RETURNING jobs.id, jobs.kind, jobs.payload, jobs.attempts, jobs.leased_until, jobs.fence_token;
