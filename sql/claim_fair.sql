-- claim_fair.sql: the fair claim's second step. For the tenants
-- claim_fair_tenants.sql locked, in this transaction, counts each one's
-- running jobs again and claims its oldest due jobs of that priority, up to
-- its room under per_tenant, round by round: every tenant's first job before
-- any tenant's second, then by age. Marks them running as claim.sql does.
-- A tenant whose running jobs grew since the first step ranked it is left
-- for the next claim: another claim took one of its jobs after the first
-- step's snapshot, so the ranking no longer holds (the caller looks again).
-- Safe: yes, inside the transaction that ran claim_fair_tenants.sql (the
--   tenants' locks are what make the cap exact).
-- Parameters: tenants (text[]) and ranked_running (int[], each one's running
--             count as ranked), both from claim_fair_tenants.sql, in its
--             order; priority (int), per_tenant (int), batch (int, 1..10000),
--             lease (interval).
-- Notes: the count of running jobs is exact across every fair claimer: this
--   statement's snapshot is taken after the tenant's lock was granted, so it
--   sees every claim of that tenant committed by whoever held the lock before
--   (READ COMMITTED takes a new snapshot per statement). A claim that is not
--   fair (claim.sql, claim_priority.sql) takes no tenant lock, and is not
--   capped. Each tenant's candidate rows are read, not locked, inside the
--   LATERAL query (PostgreSQL refuses FOR UPDATE with DISTINCT, GROUP BY or a
--   window, so the round ranking is done above it); only the rows the ranking
--   keeps are then locked, FOR UPDATE SKIP LOCKED, and claimed. Locking in the
--   LATERAL query locked up to min(room, batch) rows per tenant, and those the
--   LIMIT left out stayed locked, unclaimed, until this transaction ended,
--   hidden from every other claim's SKIP LOCKED (tests/test_fair_claim.py).
--   A kept row that another claim (not fair, so not behind the tenant's lock)
--   took meanwhile is skipped: READ COMMITTED checks status = 'ready' again on
--   its newest version before locking it, and this claim returns one job fewer
--   ("Read Committed Isolation Level",
--   https://www.postgresql.org/docs/18/transaction-iso.html).

WITH running AS (
  SELECT tenant, count(*) AS running
  FROM jobs
  WHERE status = 'running' AND tenant = ANY(:'tenants'::text[])
  GROUP BY tenant
),
taken AS (
  SELECT j.id, j.tenant, j.run_at
  FROM unnest(:'tenants'::text[], :'ranked_running'::int[]) AS t (tenant, ranked_running)
  LEFT JOIN running r ON r.tenant = t.tenant
  CROSS JOIN LATERAL (
    SELECT jobs.id, jobs.tenant, jobs.run_at FROM jobs
    WHERE jobs.status = 'ready' AND jobs.tenant = t.tenant AND jobs.priority = :priority
      AND jobs.run_at BETWEEN '-infinity' AND now()
    ORDER BY jobs.run_at
    LIMIT CASE WHEN coalesce(r.running, 0) > t.ranked_running THEN 0
               ELSE greatest(0, least(:per_tenant - coalesce(r.running, 0), :batch)) END
  ) AS j
),
kept AS (
  SELECT id FROM taken
  ORDER BY row_number() OVER (PARTITION BY tenant ORDER BY run_at), run_at
  LIMIT :batch
),
next AS (
  SELECT jobs.id FROM jobs
  WHERE jobs.id = ANY (ARRAY(SELECT id FROM kept)) AND jobs.status = 'ready'
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
          jobs.fence_token, jobs.tenant;
