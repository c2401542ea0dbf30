-- lab/hand_back_places.sql: LAB HELPER. Where the jobs a rate limit handed
-- back (sql/hand_back.sql) now wait in line. The partner lab seeds every job
-- due before it was enqueued (lab/seed_jobs.sql), so a ready job whose run_at
-- is past its enqueued_at had its run_at moved by a hand-back. For each ready
-- job of the kind: its place in the claims' order now (run_at, then id) and
-- its place in the order it was enqueued (enqueued_at, then id; the seed
-- enqueues in id order in one statement).
-- Safe: yes, read-only.
-- Parameters: kind (text).
-- Returns: waiting (handed-back jobs still ready), first_place (the best
--   place in line of any of them, NULL if none), not_moved (ready jobs never
--   handed back), fewest_lost and most_lost (places lost: place now less
--   place at enqueue).

SELECT count(*) FILTER (WHERE moved) AS waiting,
       min(place_now) FILTER (WHERE moved) AS first_place,
       count(*) FILTER (WHERE NOT moved) AS not_moved,
       min(place_now - place_enqueued) FILTER (WHERE moved) AS fewest_lost,
       max(place_now - place_enqueued) FILTER (WHERE moved) AS most_lost
FROM (
  SELECT run_at > enqueued_at AS moved,
         row_number() OVER (ORDER BY run_at, id) AS place_now,
         row_number() OVER (ORDER BY enqueued_at, id) AS place_enqueued
  FROM jobs
  WHERE kind = :'kind' AND status = 'ready'
) AS line;
