-- fence_epoch.sql: run once on a replica just promoted to primary, before any worker claims
-- on it. Moves every job's fencing token to the start of a new epoch: the next multiple of
-- 2^32 that is more than 2^31 above the largest token on this server. The old primary may
-- have handed out tokens this server never received (asynchronous replication loses the
-- last moments of WAL); each was at most the job's token here plus the claims made in that
-- gap, so while no job was claimed 2^31 times in the gap, no token from before the failover
-- can equal one a claim hands out after it (the first is base + 1). claim.sql and every
-- fenced statement stay as taught: they only compare tokens for equality. A holder from
-- before the failover is fenced even when its claim did reach this server: its job runs
-- again once its lease runs out (reap.sql), which an at-least-once queue allows.
-- fence_token is bigint (schema.sql): 2^63 leaves room for 2^31 epochs of 2^32 tokens each;
-- past that the addition raises "bigint out of range" and nothing changes.
-- Safe: yes, once per promotion. It updates every row of jobs in one transaction (a new
--   row version each: vacuum reclaims the old ones, as after any full-table update).
-- Parameters: none.

WITH epoch AS (
  SELECT ((coalesce(max(fence_token), 0) + 2147483648) / 4294967296 + 1) * 4294967296 AS base
  FROM jobs
), moved AS (
  UPDATE jobs SET fence_token = epoch.base
  FROM epoch
  RETURNING jobs.id
)
SELECT (SELECT base FROM epoch) AS base, (SELECT count(*) FROM moved) AS jobs_moved;
