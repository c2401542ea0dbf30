-- exercise/model/claim_one_per_tenant.sql: the model answer to lesson 10b's
-- Your turn: the fair claim in one statement. Within the best priority with
-- due tenant work, each tenant with due work gives its oldest due job, the
-- tenants whose oldest due job is oldest first, up to :batch jobs; marked
-- running as claim.sql marks them.
-- Safe: yes. The library's fair claim (sql/claim_fair_tenants.sql, then
--   sql/claim_fair.sql) adds the cap on each tenant's running jobs and a walk
--   over the tenants that reads one index entry each; this is the idea, in one
--   statement.
-- Parameters: batch (int), lease (interval).
-- Notes: PostgreSQL refuses FOR UPDATE with DISTINCT or GROUP BY, so the
--   tenants are found first, unlocked, with the run_at of each one's oldest
--   due job, and each one's oldest due job is locked in a LATERAL subquery
--   (FOR UPDATE SKIP LOCKED: a tenant whose oldest job another claim holds
--   gives its next one). The LIMIT sits right above that join, and the
--   tenants come into it already in order, so the join runs the subquery
--   for one tenant at a time and stops at :batch jobs: it locks only the rows
--   it returns. Ordering by the locked rows' run_at instead (ORDER BY
--   first.run_at LIMIT :batch) sorts every tenant's row before the LIMIT, so
--   it locks one row per tenant and the rows the LIMIT leaves out stay
--   locked, unclaimed, until the transaction ends, hidden from every other
--   claim's SKIP LOCKED (exercise/wrong/fair_claim_locks_unreturned.sql).
--   The best priority is there for the index, not only for priorities: with
--   it, each tenant's subquery is one descent of jobs_ready_tenant_priority_idx
--   (priority, tenant, run_at). Without it each subquery walks the flood in
--   run_at order. At ten times the lesson's size (200,000 jobs of one tenant
--   older than 20 each of 1,000 others, batch 10; EXPLAIN (ANALYZE, BUFFERS),
--   shared_buffers 128 MB): this statement read 1,070 buffers on PostgreSQL
--   18.6 and 15.18 (and 1,079 on 15 with shared_buffers 1 GB), 3,080 after
--   1,000 jobs were claimed and done while a second database held a
--   transaction open; 38,938 without the priority (1.6 s on 18, 4.3 s on
--   15). The sort-then-LIMIT version read 7,004 and locked 991 rows it did
--   not return; run for every tenant without the priority it had read
--   4,401,752 buffers and 34 s on 18.6, 47 s on 15.18. Times on a loaded
--   machine were 85 to 330 ms. Its cost grows with the ready rows of the best
--   priority (the GROUP BY reads them all), the library's with the tenants
--   (docs/beyond-fifo.md has the FIFO claim and the library's fair claim).

WITH best AS (
  SELECT min(priority) AS priority FROM jobs
  WHERE status = 'ready' AND tenant IS NOT NULL AND run_at BETWEEN '-infinity' AND now()
),
due AS (
  SELECT tenant, min(run_at) AS oldest FROM jobs
  WHERE status = 'ready' AND tenant IS NOT NULL AND priority = (SELECT priority FROM best)
    AND run_at BETWEEN '-infinity' AND now()
  GROUP BY tenant
  ORDER BY oldest
),
next AS (
  SELECT first.id
  FROM due
  CROSS JOIN LATERAL (
    SELECT jobs.id FROM jobs
    WHERE jobs.status = 'ready' AND jobs.tenant = due.tenant
      AND jobs.priority = (SELECT priority FROM best)
      AND jobs.run_at BETWEEN '-infinity' AND now()
    ORDER BY jobs.run_at
    LIMIT 1
    FOR UPDATE SKIP LOCKED
  ) AS first
  ORDER BY due.oldest
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
