-- renew_leases.sql: the Worker's heartbeat for every job one process holds,
-- and its fenced check before a job starts (with one id): extend_leases.sql
-- that never waits on a row. Pushes each lease `lease` past the moment the
-- statement runs (clock_timestamp(), not the transaction's start), fenced
-- row by row on the fencing token its claim returned, and skips a row another
-- transaction has locked (an operator's open UPDATE, a reaper, a completion).
-- One row per claim that still holds its job in the committed state the
-- statement reads, with `renewed`: true if its lease was pushed, false if its
-- row was skipped (locked, or changed by a transaction that committed after
-- the statement began) and its lease left as it was. A claim missing from
-- the result no longer holds its job (reaped, claimed again, requeued, done):
-- the worker has lost it. A skipped row is not lost: the next beat tries it
-- again, and the worker's lease clock gives it up before the lease it has ends.
-- Safe: yes. Never waits on a row lock (SKIP LOCKED), so one locked row holds
--   up no other job's renewal, and it cannot deadlock with a batch
--   completion, whatever order either meets the rows in. It still waits for
--   the table's lock behind a pending ACCESS EXCLUSIVE request (an ALTER
--   TABLE queued behind an open transaction), and the server may be slow:
--   the Worker's heartbeat session bounds both with lock_timeout and
--   statement_timeout (worker/leases.py). The check before a job starts runs
--   this statement too, on the same session: waiting there on one job's row
--   would hold every other job's beat behind it, so a job whose row is locked
--   when it is due to start is not started (only a renewal that matched lets
--   a job start).
-- Parameters: ids (bigint[]), fence_tokens (bigint[], the same length, in the
--   same order), lease (interval).

WITH held AS (
  SELECT jobs.id, jobs.fence_token
  FROM jobs
  JOIN unnest(:'ids'::bigint[], :'fence_tokens'::bigint[]) AS claimed (id, fence_token)
    ON jobs.id = claimed.id AND jobs.fence_token = claimed.fence_token
  WHERE jobs.status = 'running'
),
free AS (
  SELECT jobs.id
  FROM jobs
  JOIN held ON jobs.id = held.id AND jobs.fence_token = held.fence_token
  WHERE jobs.status = 'running'
  FOR UPDATE OF jobs SKIP LOCKED
),
renewed AS (
  UPDATE jobs
  SET leased_until = clock_timestamp() + :'lease'::interval
  FROM free
  WHERE jobs.id = free.id
  RETURNING jobs.id
)
SELECT held.id, held.fence_token, renewed.id IS NOT NULL AS renewed
FROM held
LEFT JOIN renewed ON renewed.id = held.id;
