-- lab/autovacuum_settings.sql: LAB HELPER. When autovacuum may start cleaning
-- a table with no settings of its own (threshold + scale factor x rows), as
-- this server runs now: the settings in force, not the compiled-in defaults,
-- so a server configured otherwise shows it.
-- Safe: yes, read-only.
-- Parameters: none.

SELECT current_setting('autovacuum_vacuum_threshold')::int AS threshold,
       current_setting('autovacuum_vacuum_scale_factor')::float8 AS scale_factor;
