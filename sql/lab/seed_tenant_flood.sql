-- lab/seed_tenant_flood.sql: LAB HELPER. One tenant floods the queue: `flood` due
-- jobs of tenant 'big', all older than one due job each of `tenants` other
-- tenants ('t1', 't2', ...), so the oldest ready rows are all the flood's. The
-- fairness model answer's claim is read on it (tests/test_interview_sql.py), so
-- the tenant goes in the column that answer adds (jobs.tenant), written at enqueue.
-- Safe: yes, inserts only; needs the fairness answer's tenant column.
-- Parameters: flood (int), tenants (int).

INSERT INTO jobs (kind, tenant, payload, run_at)
SELECT 'webhook', t.tenant, jsonb_build_object('n', t.n),
       now() - interval '1 hour' + t.n * interval '1 microsecond'
FROM (
  SELECT 'big' AS tenant, g AS n FROM generate_series(1, :flood) AS g
  UNION ALL
  SELECT 't' || g, :flood + g FROM generate_series(1, :tenants) AS g
) AS t;
