-- admin/other_client_sessions.sql: how many client sessions besides this one
-- the server has (in any database), so `pgq-teach clean` leaves running a
-- server it started if someone connected meanwhile.
-- Safe: yes, read-only.
-- Parameters: none.

SELECT count(*)::int AS sessions
FROM pg_stat_activity
WHERE backend_type = 'client backend' AND pid <> pg_backend_pid();
