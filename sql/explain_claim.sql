-- explain_claim.sql: the plan of the claim's locking read. Look for an Index
-- Scan using jobs_ready_idx with a LockRows step above it.
-- Safe: yes, EXPLAIN without ANALYZE runs nothing.
-- Parameters: none.

EXPLAIN (COSTS OFF)
SELECT id FROM jobs
WHERE status = 'ready' AND run_at BETWEEN '-infinity' AND now()
ORDER BY run_at
LIMIT 1
FOR UPDATE SKIP LOCKED;
