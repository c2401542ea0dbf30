-- cleanup_done.sql: delete one small batch of done jobs. Small batches keep
-- each transaction short, so cleanup never holds back VACUUM for long.
-- ARRAY(...) runs the LIMIT subquery once, first, so the DELETE finds its rows
-- through the primary key (an Index Scan on id = ANY). Written as
-- id IN (SELECT ... LIMIT), the planner joins the subquery to a Seq Scan of
-- the whole table in every batch (teaching/cleanup_in_subquery.sql; lesson 10
-- shows both plans). The subquery is a Seq Scan of jobs. On a table under a
-- quarter of shared_buffers it starts at the first page each batch and reads
-- past the rows earlier batches left dead, a little more each batch, until
-- VACUUM clears them; on a bigger one synchronize_seqscans (on by default)
-- starts it where the last scan of jobs reached, so a batch stays about one
-- batch's pages (another Seq Scan of jobs moves that point).
-- Safe: yes. Call it in a loop until it deletes fewer than :batch rows.
-- Parameters: batch (int).

DELETE FROM jobs
WHERE id = ANY(ARRAY(
  SELECT id FROM jobs
  WHERE status = 'done'
  LIMIT :batch
));
