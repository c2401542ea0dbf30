-- lab/other_sessions.sql: LAB HELPER. How many other client sessions are
-- connected to this database right now: what a pool of workers holds.
-- Safe: yes, read-only.
-- Parameters: none.

SELECT count(*) AS sessions
FROM pg_stat_activity
WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend';
