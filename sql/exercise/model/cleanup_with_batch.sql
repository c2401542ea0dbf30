-- exercise/model/cleanup_with_batch.sql: a right answer to lesson 10's
-- cleanup exercise, led by a WITH query that picks one batch of done jobs;
-- the DELETE then removes only those. Used by the lesson 10 checker's tests.
-- Safe: yes.
-- Parameters: batch (int).

WITH batch AS (
  SELECT id FROM jobs
  WHERE status = 'done'
  LIMIT :batch
)
DELETE FROM jobs
WHERE id IN (SELECT id FROM batch);
