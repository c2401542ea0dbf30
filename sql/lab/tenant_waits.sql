-- lab/tenant_waits.sql: LAB HELPER. How long the small tenants' jobs waited,
-- read from the server's own timestamps: for every claimed job of a tenant
-- other than `flood_tenant`, its wait from enqueued_at to attempted_at (its
-- claim), and how many jobs were claimed before it (its place in the claim
-- order, by attempted_at, which clock_timestamp() sets row by row). Returns
-- the p50 and p99 of both, and the jobs counted.
-- Safe: yes, read only.
-- Parameters: flood_tenant (text).

WITH claimed AS (
  SELECT tenant, attempted_at - enqueued_at AS wait,
         row_number() OVER (ORDER BY attempted_at, id) - 1 AS ahead
  FROM jobs
  WHERE attempted_at IS NOT NULL
)
SELECT count(*) AS jobs,
       extract(epoch FROM percentile_disc(0.5) WITHIN GROUP (ORDER BY wait)) AS wait_p50_s,
       extract(epoch FROM percentile_disc(0.99) WITHIN GROUP (ORDER BY wait)) AS wait_p99_s,
       percentile_disc(0.5) WITHIN GROUP (ORDER BY ahead) AS ahead_p50,
       percentile_disc(0.99) WITHIN GROUP (ORDER BY ahead) AS ahead_p99
FROM claimed
WHERE tenant IS DISTINCT FROM :'flood_tenant';
