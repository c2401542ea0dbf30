-- lab/waiting_on_lock.sql: LAB HELPER. The sessions of this database that
-- wait for a heavyweight lock (a row or table another transaction holds) now,
-- as pg_stat_activity shows them, oldest wait first.
-- Safe: yes, read-only; it reads the server's view of sessions, no table.
-- Parameters: none.

SELECT pid, application_name, left(query, 80) AS query
FROM pg_stat_activity
WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()
ORDER BY state_change, pid;
