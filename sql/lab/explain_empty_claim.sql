-- lab/explain_empty_claim.sql: LAB HELPER. Run the claim of claim.sql once,
-- for one job, and report what it read: EXPLAIN (ANALYZE, BUFFERS) as JSON.
-- ANALYZE executes the statement, so run it when nothing is ready (the
-- "empty claim"): then it changes no row.
-- Safe: only when no job is ready; otherwise it claims one.
-- Parameters: none.

EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON)
WITH next AS (
  SELECT id FROM jobs
  WHERE status = 'ready' AND run_at BETWEEN '-infinity' AND now()
  ORDER BY run_at
  LIMIT 1
  FOR UPDATE SKIP LOCKED
)
UPDATE jobs
SET status = 'running',
    attempts = jobs.attempts + 1,
    leased_until = now() + interval '5 minutes'
FROM next
WHERE jobs.id = next.id
RETURNING jobs.id;
