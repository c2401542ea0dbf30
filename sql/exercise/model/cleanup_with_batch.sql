-- exercise/model/cleanup_with_batch.sql: a right answer to lesson 10's
-- cleanup exercise, spelt another way: the conditions in another order, the
-- table named by an alias, and the deleted ids returned (as the library's
-- cleanup_done.sql does, to carry the next :after). Used by the lesson 10
-- checker's tests.
-- Safe: yes.
-- Parameters: batch (int), after (bigint).

DELETE FROM jobs
WHERE id = ANY(ARRAY(
  SELECT j.id FROM jobs AS j
  WHERE j.id > :after AND j.status = 'done'
  ORDER BY j.id
  LIMIT :batch
))
RETURNING id;
