-- extend_leases.sql: the heartbeat for every job one worker process holds, in
-- one statement: pushes each lease `lease` past the moment the statement runs
-- (clock_timestamp(), not the transaction's start), fenced row by row on the
-- fencing token its claim returned. A row that no longer matches (reaped,
-- claimed again, requeued) is left alone and missing from the result: the
-- worker has lost that job. The library's Worker runs renew_leases.sql
-- instead, which skips a locked row rather than wait for it.
-- Safe: yes. Locks its rows in id order, like complete_many.sql, so a beat
--   and a batch completion that share rows cannot deadlock; it waits for a
--   reaper that holds a row and then sees the row's new state. It waits as
--   long for any other transaction that holds one of its rows (an operator's
--   UPDATE left open), and every other lease waits with it: a heartbeat that
--   runs it needs a lock_timeout well inside the lease.
-- Parameters: ids (bigint[]), fence_tokens (bigint[], the same length, in the
--   same order), lease (interval).

WITH mine AS (
  SELECT jobs.id
  FROM jobs
  JOIN unnest(:'ids'::bigint[], :'fence_tokens'::bigint[]) AS held (id, fence_token)
    ON jobs.id = held.id AND jobs.fence_token = held.fence_token
  WHERE jobs.status = 'running'
  ORDER BY jobs.id
  FOR UPDATE OF jobs
)
UPDATE jobs
SET leased_until = clock_timestamp() + :'lease'::interval
FROM mine
WHERE jobs.id = mine.id
RETURNING jobs.id, jobs.fence_token;
