-- cleanup_done.sql: delete one small batch of done jobs. Small batches keep
-- each transaction short, so cleanup never holds back VACUUM for long.
-- Safe: yes. Call it in a loop until it deletes nothing.
-- Parameters: batch (int).

DELETE FROM jobs
WHERE id IN (
  SELECT id FROM jobs
  WHERE status = 'done'
  LIMIT :batch
);
