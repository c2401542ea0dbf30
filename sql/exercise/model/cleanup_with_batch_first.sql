-- exercise/model/cleanup_with_batch_first.sql: a right answer to lesson 10's
-- cleanup exercise, led by a WITH query: it picks the next batch of done ids
-- after :after, then deletes exactly those, gathered by id = ANY(ARRAY(...))
-- so the delete finds each one through the primary key. Used by the lesson 10
-- checker's tests.
-- Safe: yes.
-- Parameters: batch (int), after (bigint).

WITH batch AS (
  SELECT id FROM jobs
  WHERE status = 'done' AND id > :after
  ORDER BY id
  LIMIT :batch
)
DELETE FROM jobs
WHERE id = ANY(ARRAY(SELECT id FROM batch))
RETURNING id;
