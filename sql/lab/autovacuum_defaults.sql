-- lab/autovacuum_defaults.sql: LAB HELPER. The server's built-in defaults for
-- when autovacuum starts cleaning a table (threshold + scale factor x rows),
-- as pg_settings reports them (boot_val: the value compiled in, whatever a
-- configuration file later set).
-- Safe: yes, read-only.
-- Parameters: none.

SELECT
  (SELECT boot_val::int FROM pg_settings WHERE name = 'autovacuum_vacuum_threshold') AS threshold,
  (SELECT boot_val::float8 FROM pg_settings WHERE name = 'autovacuum_vacuum_scale_factor') AS scale_factor;
