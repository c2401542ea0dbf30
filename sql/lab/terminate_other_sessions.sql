-- lab/terminate_other_sessions.sql: LAB HELPER. End every other session on
-- this database, as a crash or an operator would, to watch what survives.
-- Safe: NO outside a lesson's own database.
-- Parameters: none.

SELECT pid, pg_terminate_backend(pid)
FROM pg_stat_activity
WHERE datname = current_database() AND pid <> pg_backend_pid();
