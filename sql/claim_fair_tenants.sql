-- claim_fair_tenants.sql: the fair claim's first step. Finds the best
-- priority (0 first, from min_priority on) with due jobs that have a tenant, lists the tenants with
-- due work there, fewest running jobs first, then in turn: the tenants after
-- `after` (the last one this claimer served) by name, then from the first,
-- leaves out any tenant already at per_tenant running jobs, and takes a lock
-- on up to batch of them, skipping a tenant whose lock another fair claim
-- holds. Returns (tenant, priority, running) for each tenant locked, running
-- being the count of its running jobs this ranking used. When every tenant
-- with due work at that priority is at per_tenant, it returns one row (NULL,
-- priority, NULL) instead: the caller looks again from the next priority, so
-- capped tenants at the top never leave the other tenants' lower-priority
-- work waiting while the workers idle.
-- Safe: yes, read only but for the locks, which last until the transaction
--   ends. Run it in a transaction with claim_fair.sql after it (queue.claim_fair
--   does both).
-- Parameters: batch (int, 1..10000), per_tenant (int, the cap on each tenant's
--             running jobs), after (text or NULL: start from the first),
--             min_priority (int, 0..9: the first priority to look at).
-- Why turns: ordered by running jobs alone, a lone worker whose jobs finish
--   before its next claim sees every count at 0, and the oldest job (the
--   flood's) would win every time. The turn is the claimer's to keep
--   (queue.next_turn).
-- Notes: a tenant's lock is a transaction-level advisory lock on the key
--   (4601, hashtext(tenant)): pg_try_advisory_xact_lock never waits, so it is
--   the tenant's SKIP LOCKED (Advisory Lock Functions,
--   https://www.postgresql.org/docs/18/functions-admin.html#FUNCTIONS-ADVISORY-LOCKS).
--   Two tenants whose names hash alike share a lock: a claim that holds one
--   skips the other for that round, and each cap still holds.
--   The running counts here only choose whom to lock; claim_fair.sql counts
--   again after the lock is held, with a newer snapshot, and that count is the
--   one that caps.
--   The tenants are found with one index descent each in
--   jobs_ready_tenant_priority_idx (priority, tenant, run_at), a loose index
--   scan written as a recursive query (WITH RECURSIVE; PostgreSQL has no skip
--   scan for DISTINCT), each descent landing on the tenant's oldest ready job,
--   so the cost grows with the number of tenants that have ready jobs at that
--   priority, not with their jobs: docs/beyond-fifo.md has it measured. The
--   best priority is a scalar subquery so that each descent can use it as an
--   index bound (joined as a table, it was not, and each descent read every
--   ready row of the priority: 26 s with 1,000 tenants).
--   The materialized, ordered list is read in order, and the LIMIT stops it
--   once batch tenants are locked: no lock is taken on a tenant it never reads.
--   A job with no tenant is in no tenant's line: the fair claim never takes it.

WITH RECURSIVE best (priority) AS MATERIALIZED (
  SELECT p.priority
  FROM generate_series(:min_priority, 9) AS p (priority)
  WHERE EXISTS (
    SELECT 1 FROM jobs
    WHERE status = 'ready' AND tenant IS NOT NULL AND priority = p.priority
      AND run_at BETWEEN '-infinity' AND now()
  )
  ORDER BY p.priority
  LIMIT 1
),
-- Each tenant's oldest ready job at that priority: if it is not due, none of
-- the tenant's is (it has the smallest run_at).
tenants (tenant, run_at) AS (
  (SELECT j.tenant, j.run_at FROM jobs j
   WHERE j.status = 'ready' AND j.tenant IS NOT NULL AND j.priority = (SELECT priority FROM best)
   ORDER BY j.tenant, j.run_at LIMIT 1)
  UNION ALL
  SELECT next.tenant, next.run_at
  FROM tenants t
  CROSS JOIN LATERAL (
    SELECT j.tenant, j.run_at FROM jobs j
    WHERE j.status = 'ready' AND j.tenant IS NOT NULL AND j.priority = (SELECT priority FROM best)
      AND j.tenant > t.tenant
    ORDER BY j.tenant, j.run_at LIMIT 1
  ) AS next
),
running AS (
  SELECT tenant, count(*) AS running
  FROM jobs
  WHERE status = 'running' AND tenant IS NOT NULL
  GROUP BY tenant
),
candidates AS MATERIALIZED (
  SELECT t.tenant, (SELECT priority FROM best) AS priority, coalesce(r.running, 0) AS running
  FROM tenants t
  LEFT JOIN running r ON r.tenant = t.tenant
  WHERE t.run_at <= now() AND coalesce(r.running, 0) < :per_tenant
  ORDER BY coalesce(r.running, 0), coalesce(t.tenant <= :'after', false), t.tenant
)
(SELECT tenant, priority, running
 FROM candidates
 WHERE pg_try_advisory_xact_lock(4601, hashtext(tenant))
 LIMIT :batch)
UNION ALL
SELECT NULL, priority, NULL  -- every tenant there is at its cap: look from the next priority
FROM best
WHERE NOT EXISTS (SELECT 1 FROM candidates);
