-- lab/seed_tenant_jobs.sql: LAB HELPER. Add `count` due jobs spread evenly
-- over `tenants` tenants ('t1', 't2', ...) and over priorities 0 to
-- `priorities` - 1, each a microsecond after the one before, in one statement.
-- For the claims' benchmarks and plans (the fair and priority claims beside
-- the FIFO claim on one queue).
-- Safe: yes, inserts only.
-- Parameters: kind (text), count (int), tenants (int, at least 1),
--             priorities (int, 1..10).

INSERT INTO jobs (kind, payload, run_at, tenant, priority)
SELECT :'kind', jsonb_build_object('n', g),
       now() - interval '1 hour' + g * interval '1 microsecond',
       't' || (1 + g % :tenants), g % :priorities
FROM generate_series(1, :count) AS g;
