-- admin/reload_config.sql: make the server re-read its configuration files (settings
-- that need no restart, such as max_wal_size, take effect).
-- Safe: yes. Needs a superuser.
-- Parameters: none.

SELECT pg_reload_conf();
