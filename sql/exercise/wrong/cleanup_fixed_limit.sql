-- exercise/wrong/cleanup_fixed_limit.sql: TEACHING ONLY, WRONG. The batched
-- cleanup with its batch size written into the statement (LIMIT 500) instead
-- of taken from :batch: it fits the one size its author tried, and the caller
-- can no longer make a batch shorter or longer. Used by the lesson 10
-- checker's tests.
-- Safe: correct rows, but the batch is not the caller's; use LIMIT :batch.
-- Parameters: batch (int, ignored).

DELETE FROM jobs
WHERE id IN (
  SELECT id FROM jobs
  WHERE status = 'done'
  LIMIT 500
);
