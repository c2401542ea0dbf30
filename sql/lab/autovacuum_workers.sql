-- lab/autovacuum_workers.sql: LAB HELPER. How many autovacuum workers are busy
-- in other databases and in this one, and how many the server may run at once.
-- The autovacuum lab reads it: a worker busy elsewhere is one that cannot
-- clean this database's jobs table.
-- Safe: yes, read-only.
-- Parameters: none.

SELECT
    count(*) FILTER (WHERE datname IS DISTINCT FROM current_database()) AS busy_elsewhere,
    count(*) FILTER (WHERE datname = current_database()) AS busy_here,
    current_setting('autovacuum_max_workers')::int AS max_workers
FROM pg_stat_activity
WHERE backend_type = 'autovacuum worker';
