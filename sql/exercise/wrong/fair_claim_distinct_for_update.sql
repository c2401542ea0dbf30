-- exercise/wrong/fair_claim_distinct_for_update.sql: TEACHING ONLY, WRONG.
-- One job per tenant by DISTINCT ON, locked in the same SELECT: PostgreSQL
-- refuses FOR UPDATE with DISTINCT (SQLSTATE 0A000, "FOR UPDATE is not
-- allowed with DISTINCT clause"), so nothing runs.
-- Safe: yes: the server refuses it before it runs.
-- Parameters: batch (int), lease (interval).

WITH next AS (
  SELECT DISTINCT ON (tenant) id FROM jobs
  WHERE status = 'ready' AND tenant IS NOT NULL AND run_at BETWEEN '-infinity' AND now()
  ORDER BY tenant, run_at
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
