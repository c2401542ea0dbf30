-- exercise/wrong/fair_claim_locks_unreturned.sql: TEACHING ONLY, WRONG.
-- The fair claim with its LIMIT after a sort of every tenant's locked row
-- (lesson 10b's model answer until it was fixed): each tenant's oldest due
-- job is locked in the LATERAL subquery, then all of them are sorted by
-- run_at and :batch kept. The sort needs every tenant's row first, so one row
-- per tenant is locked, and those the LIMIT leaves out stay locked, unclaimed,
-- until the transaction ends: every other claim's SKIP LOCKED passes over
-- them. It returns the right jobs; it holds more than it returns.
-- Safe: no: locks rows it does not claim.
-- Parameters: batch (int), lease (interval).

WITH best AS (
  SELECT min(priority) AS priority FROM jobs
  WHERE status = 'ready' AND tenant IS NOT NULL AND run_at BETWEEN '-infinity' AND now()
),
due AS (
  SELECT DISTINCT tenant FROM jobs
  WHERE status = 'ready' AND tenant IS NOT NULL AND priority = (SELECT priority FROM best)
    AND run_at BETWEEN '-infinity' AND now()
),
next AS (
  SELECT first.id
  FROM due
  CROSS JOIN LATERAL (
    SELECT jobs.id, jobs.run_at FROM jobs
    WHERE jobs.status = 'ready' AND jobs.tenant = due.tenant
      AND jobs.priority = (SELECT priority FROM best)
      AND jobs.run_at BETWEEN '-infinity' AND now()
    ORDER BY jobs.run_at
    LIMIT 1
    FOR UPDATE SKIP LOCKED
  ) AS first
  ORDER BY first.run_at
  LIMIT :batch
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
