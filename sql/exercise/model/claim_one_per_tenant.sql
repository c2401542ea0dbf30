-- exercise/model/claim_one_per_tenant.sql: the model answer to lesson 10b's
-- Your turn: the fair claim in one statement. Within the best priority with
-- due tenant work, each tenant with due work gives its oldest due job, the
-- oldest of those first, up to :batch jobs; marked running as claim.sql marks
-- them.
-- Safe: yes. The library's fair claim (sql/claim_fair_tenants.sql, then
--   sql/claim_fair.sql) adds the cap on each tenant's running jobs and a walk
--   over the tenants that reads one index entry each; this is the idea, in one
--   statement.
-- Parameters: batch (int), lease (interval).
-- Notes: PostgreSQL refuses FOR UPDATE with DISTINCT, so the tenants are found
--   first, unlocked, and each one's oldest due job is locked in a LATERAL
--   subquery (FOR UPDATE SKIP LOCKED: a tenant whose oldest job another claim
--   holds gives its next one). The outer LIMIT is applied after every
--   tenant's row is locked: those it leaves out stay locked, unchanged, until
--   this statement's transaction ends.
--   The best priority is there for the index, not only for priorities: with
--   it, each tenant's subquery is one descent of jobs_ready_tenant_priority_idx
--   (priority, tenant, run_at). Without it, at ten times the lesson's size
--   (200,000 jobs of one tenant older than 20 each of 1,000 others, batch 10)
--   each subquery walked the flood in run_at order: 4,401,752 buffers and 34 s
--   on PostgreSQL 18.6, 47 s on 15.18. With it: 9,347 buffers and 82 ms on 18,
--   9,341 and 155 ms on 15 (94 ms with shared_buffers 1 GB), beside the FIFO
--   claim's 139 buffers and the library's two-step fair claim's 4,330. Its cost
--   grows with the ready rows of the best priority (the DISTINCT reads them all),
--   the library's with the tenants.

WITH best AS (
  SELECT min(priority) AS priority FROM jobs
  WHERE status = 'ready' AND tenant IS NOT NULL AND run_at BETWEEN '-infinity' AND now()
),
due AS (
  SELECT DISTINCT tenant FROM jobs
  WHERE status = 'ready' AND tenant IS NOT NULL AND priority = (SELECT priority FROM best)
    AND run_at BETWEEN '-infinity' AND now()
),
next AS (
  SELECT first.id
  FROM due
  CROSS JOIN LATERAL (
    SELECT jobs.id, jobs.run_at FROM jobs
    WHERE jobs.status = 'ready' AND jobs.tenant = due.tenant
      AND jobs.priority = (SELECT priority FROM best)
      AND jobs.run_at BETWEEN '-infinity' AND now()
    ORDER BY jobs.run_at
    LIMIT 1
    FOR UPDATE SKIP LOCKED
  ) AS first
  ORDER BY first.run_at
  LIMIT :batch
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
          jobs.fence_token, jobs.tenant;
