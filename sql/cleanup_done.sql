-- cleanup_done.sql: delete the next small batch of done jobs, in id order,
-- starting after :after (0 for the first batch; then the largest id the last
-- batch returned). Small batches keep each transaction short, so cleanup never
-- holds back VACUUM for long. The keyset (id > :after ORDER BY id) walks the
-- primary key from where the last batch stopped, so every batch reads about
-- one batch's pages, whatever shared_buffers is and however many dead rows the
-- earlier batches left (a Seq Scan for the LIMIT would start at page 0 on a
-- table under a quarter of shared_buffers: teaching/cleanup_from_first_page.sql).
-- ARRAY(...) runs the subquery once, first, so the DELETE fetches its rows by
-- the primary key; written id IN (SELECT ... LIMIT) the planner may join it to
-- a Seq Scan of the whole table in every batch (teaching/cleanup_in_subquery.sql).
-- A job that becomes done behind :after waits for the next cleanup run.
-- Safe: yes. Call it in a loop, carrying the largest returned id as :after,
-- until it deletes fewer than :batch rows.
-- Parameters: batch (int), after (bigint).

DELETE FROM jobs
WHERE id = ANY(ARRAY(
  SELECT id FROM jobs
  WHERE status = 'done' AND id > :after
  ORDER BY id
  LIMIT :batch
))
RETURNING id;
