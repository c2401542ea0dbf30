-- exercise/model/complete_with_lock.sql: a right answer to lesson 05's
-- exercise, led by a WITH query: it picks and locks the job's row only while
-- this worker holds the claim, then marks it done. Used by the lesson 05
-- checker's tests.
-- Safe: yes.
-- Parameters: id (bigint), fence_token (bigint).

WITH mine AS (
  SELECT id FROM jobs
  WHERE id = :id AND status = 'running' AND fence_token = :fence_token
  FOR UPDATE
)
UPDATE jobs
SET status = 'done', leased_until = NULL
FROM mine
WHERE jobs.id = mine.id
RETURNING jobs.id;
