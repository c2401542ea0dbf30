-- lab/terminate_sessions_named.sql: LAB HELPER. End every session on this
-- database whose application_name is name, as a crash, a network cut or an
-- operator would; one row per session ended.
-- Safe: NO outside a lab's own database.
-- Parameters: name (text).

SELECT pid, pg_terminate_backend(pid)
FROM pg_stat_activity
WHERE datname = current_database() AND application_name = :'name'
  AND pid <> pg_backend_pid();
