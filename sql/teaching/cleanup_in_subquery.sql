-- teaching/cleanup_in_subquery.sql: TEACHING ONLY, SLOW. The batch delete
-- written as id IN (SELECT ... LIMIT), as the guide writes it: correct rows,
-- but the planner makes it a Hash Join of the LIMIT's ids (hashed) with a Seq
-- Scan of all of jobs, so every batch reads the
-- whole table (about 15,000 buffers at 1M rows, against about 5,000 for
-- cleanup_done.sql). Lesson 10 times and explains it beside cleanup_done.sql.
-- Safe: correct rows, but slow on a big table; use cleanup_done.sql.
-- Parameters: batch (int).

DELETE FROM jobs
WHERE id IN (
  SELECT id FROM jobs
  WHERE status = 'done'
  LIMIT :batch
);
