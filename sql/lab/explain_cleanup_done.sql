-- lab/explain_cleanup_done.sql: LAB HELPER. Run cleanup_done.sql's batch once
-- and report its plan and the buffers it read, as JSON. ANALYZE executes the
-- DELETE: run it in a transaction and roll back.
-- Safe: only inside a transaction you roll back; otherwise it deletes a batch.
-- Parameters: batch (int).

EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON)
DELETE FROM jobs
WHERE id = ANY(ARRAY(
  SELECT id FROM jobs
  WHERE status = 'done'
  LIMIT :batch
));
