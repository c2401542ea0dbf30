-- claim_priority.sql: the claim with priorities. As claim.sql, but it takes
-- the smallest priority (0 first) that has due work, and within it the
-- oldest due jobs.
-- Safe: yes. A Worker made with priorities=True claims with it.
-- Parameters: batch (int, 1..10000), lease (interval).
-- Notes: served by jobs_ready_priority_idx (priority, run_at) WHERE status =
--   'ready': the index hands rows out in the ORDER BY's order, so the LIMIT
--   stops the scan at the first due rows of the best priority. Not-yet-due
--   rows of a better priority sit in front of them in that order. run_at is
--   an index condition on the index's second column: PostgreSQL 15 checks it
--   on every entry it passes, so 100,000 not-yet-due rows at priority 0 ahead
--   of due work at priority 5 cost 388 index buffers and 17 ms per claim
--   (of 200,000 due rows); PostgreSQL 18's skip scan jumps from one priority
--   to the next and read 8 (nbtree skip scan, new in 18: Release Notes 18,
--   https://www.postgresql.org/docs/18/release-18.html; src/backend/access/
--   nbtree/nbtutils.c). docs/beyond-fifo.md has both measurements. A low
--   priority waits as long as better ones have due work: starvation.

WITH next AS (
  SELECT id FROM jobs
  WHERE status = 'ready' AND run_at BETWEEN '-infinity' AND now()
  ORDER BY priority, run_at
  LIMIT :batch
  FOR UPDATE SKIP LOCKED
)
UPDATE jobs
SET status = 'running',
    attempts = jobs.attempts + 1,
    fence_token = jobs.fence_token + 1,
    leased_until = clock_timestamp() + :'lease'::interval,
    attempted_at = clock_timestamp()
FROM next
WHERE jobs.id = next.id
RETURNING jobs.id, jobs.kind, jobs.payload, jobs.attempts, jobs.max_attempts, jobs.leased_until,
          jobs.fence_token;
