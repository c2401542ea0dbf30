-- fence_epoch.sql: run once on a replica just promoted to primary, before any worker claims
-- on it. Moves the fencing token of every job not done to the start of a new epoch: the
-- next multiple of 2^32 that is more than 2^31 above the largest token on this server. The old primary may
-- have handed out tokens this server never received (asynchronous replication loses the
-- last moments of WAL); each was at most the job's token here plus the claims made in that
-- gap, so while no job was claimed 2^31 times in the gap, no token from before the failover
-- can equal one a claim hands out after it (the first is base + 1). claim.sql and every
-- fenced statement stay as taught: they only compare tokens for equality. A holder from
-- before the failover is fenced even when its claim did reach this server: its job runs
-- again once its lease runs out (reap.sql), which an at-least-once queue allows.
-- Ids too: the identity sequence on this server may be behind ids the old primary handed
-- out in the same gap, and a job enqueued here could take such an id again. Its first claim
-- gets token 1, as the lost job's did, so a stale holder's (id, token) would match a
-- different job. So the same statement moves the sequence on to the next multiple of 2^32
-- that is more than 2^31 above both the largest id in jobs and the sequence's last value
-- (pg_sequence_last_value), as it moves the tokens: new ids start past any the old primary
-- could have issued, while it enqueued fewer than 2^31 jobs in the gap.
-- fence_token is bigint (schema.sql): 2^63 leaves room for 2^31 epochs of 2^32 tokens each;
-- past that the addition raises "bigint out of range" and nothing changes.
-- Done jobs keep their tokens: no statement claims or requeues a done job (requeue_dead.sql
-- takes dead ones only), and complete.sql and fail.sql match running rows only, so a stale
-- token can never match one; skipping them keeps the write at promotion to the ready,
-- running and dead rows, however many done rows the table keeps. (max() still reads them.)
-- Safe: yes, once per promotion. It updates every job not done in one transaction (a new
--   row version each: vacuum reclaims the old ones).
-- Parameters: none.

WITH epoch AS (
  SELECT ((coalesce(max(fence_token), 0) + 2147483648) / 4294967296 + 1) * 4294967296 AS base,
         ((greatest(coalesce(max(id), 0),
                    coalesce(pg_sequence_last_value(pg_get_serial_sequence('jobs', 'id')::regclass), 0))
           + 2147483648) / 4294967296 + 1) * 4294967296 AS id_base
  FROM jobs
), moved AS (
  UPDATE jobs SET fence_token = epoch.base
  FROM epoch
  WHERE jobs.status <> 'done'
  RETURNING jobs.id
), ids AS (  -- the next enqueue takes id_base + 1
  SELECT setval(pg_get_serial_sequence('jobs', 'id'), id_base) AS id_base FROM epoch
)
SELECT (SELECT base FROM epoch) AS base, (SELECT count(*) FROM moved) AS jobs_moved,
       (SELECT id_base FROM ids) AS id_base;
