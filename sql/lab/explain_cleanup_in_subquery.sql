-- lab/explain_cleanup_in_subquery.sql: LAB HELPER. Run
-- teaching/cleanup_in_subquery.sql's batch once and report its plan and the
-- buffers it read, as JSON. ANALYZE executes the DELETE: run it in a
-- transaction and roll back.
-- Safe: only inside a transaction you roll back; otherwise it deletes a batch.
-- Parameters: batch (int).

EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON)
DELETE FROM jobs
WHERE id IN (
  SELECT id FROM jobs
  WHERE status = 'done'
  LIMIT :batch
);
