-- lab/explain_analyze_read.sql: LAB HELPER. Run the claim's locking read once
-- (status written as the literal 'ready') and report its plan and the buffers
-- it read, as JSON. It locks one row for the moment the statement lasts and
-- changes nothing.
-- Safe: yes.
-- Parameters: none.

EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON)
SELECT id FROM jobs
WHERE status = 'ready' AND run_at BETWEEN '-infinity' AND now()
ORDER BY run_at
LIMIT 1
FOR UPDATE SKIP LOCKED;
