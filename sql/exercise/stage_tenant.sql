-- exercise/stage_tenant.sql: LAB HELPER. Put one job in a tenant's line, so
-- the fair claim's check can stage a flood and a few small tenants with names
-- drawn afresh each check.
-- Safe: only in a scratch database: it rewrites a job's tenant by hand.
-- Parameters: id (bigint), tenant (text).

UPDATE jobs SET tenant = :'tenant' WHERE id = :id;
