-- exercise/wrong/fair_claim_fifo.sql: TEACHING ONLY, WRONG. Lesson 10b's
-- seeded attempt: the FIFO claim (claim.sql's statement), which takes the
-- oldest due jobs whoever they belong to, so a tenant's flood takes every
-- job of the batch and the small tenants wait for all of it.
-- Safe: NO as a fair claim (it is a correct FIFO claim).
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
    attempts = jobs.attempts + 1,
    fence_token = jobs.fence_token + 1,
    leased_until = clock_timestamp() + :'lease'::interval,
    attempted_at = clock_timestamp()
FROM next
WHERE jobs.id = next.id
RETURNING jobs.id, jobs.kind, jobs.payload, jobs.attempts, jobs.max_attempts, jobs.leased_until,
          jobs.fence_token, jobs.tenant;
