-- claim_priority.sql: the claim with priorities. As claim.sql, but it takes
-- the smallest priority (0 first) that has due work, and within it the
-- oldest due jobs.
-- Safe: yes. A Worker made with priorities=True claims with it.
-- Parameters: batch (int, 1..10000), lease (interval).
-- Notes: served by jobs_ready_priority_idx (priority, run_at) WHERE status =
--   'ready': the index hands rows out in the ORDER BY's order, so the LIMIT
--   stops the scan at the first due rows of the best priority. Not-yet-due
--   rows of a better priority sit in front of them in that order and are read
--   and filtered on the way (run_at is a filter there, not a bound, since
--   priority comes first); docs/beyond-fifo.md has the measured cost. A low
--   priority waits as long as better ones have due work: starvation, which
--   experiments.priorities shows, with aging as one answer.

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
