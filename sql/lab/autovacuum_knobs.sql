-- lab/autovacuum_knobs.sql: LAB HELPER. The server-wide settings that decide
-- when autovacuum comes (inserts count too, on their own threshold) and how
-- fast it works, as this server has them now:
-- lesson 10's autovacuum lab reports them beside its result.
-- Safe: yes, read-only.
-- Parameters: none.

SELECT name, setting || coalesce(unit, '') AS value
FROM pg_settings
WHERE name IN ('autovacuum_naptime', 'autovacuum_max_workers', 'autovacuum_vacuum_cost_limit',
               'autovacuum_vacuum_cost_delay', 'vacuum_cost_limit',
               'autovacuum_vacuum_insert_threshold', 'autovacuum_vacuum_insert_scale_factor')
ORDER BY name;
