-- teaching/cleanup_from_first_page.sql: TEACHING ONLY, SLOW ON SOME SERVERS.
-- The batch delete with no keyset: ARRAY(...) runs the LIMIT subquery once,
-- first, so the DELETE finds its rows through the primary key, but the
-- subquery is a Seq Scan of jobs, and where that scan starts decides a
-- batch's cost. On a table under a quarter of shared_buffers (or with
-- synchronize_seqscans off) it starts at page 0 in every batch and reads past
-- every row the earlier batches left dead, more each batch until VACUUM clears
-- them: the whole run grows with the square of the rows deleted. Only on a
-- bigger table does a synchronized scan start where the last one reached. So
-- the same statement stays flat at shared_buffers 128 MB and grows at 1 GB on
-- a 1M-row table (lesson 10 shows the stored measurements).
-- Safe: correct rows, but its cost depends on shared_buffers; use
-- cleanup_done.sql.
-- Parameters: batch (int).

DELETE FROM jobs
WHERE id = ANY(ARRAY(
  SELECT id FROM jobs
  WHERE status = 'done'
  LIMIT :batch
));
