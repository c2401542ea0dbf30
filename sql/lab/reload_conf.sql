-- lab/reload_conf.sql: LAB HELPER. Make the server re-read its settings, so
-- an ALTER SYSTEM takes effect.
-- Safe: yes; superuser only.
-- Parameters: none.

SELECT pg_reload_conf();
