-- admin/end_sessions_in_database.sql: end every session connected to one
-- database (but this one), waiting up to 5 s for each to go, so the tests can
-- empty a database they reuse as DROP DATABASE ... WITH (FORCE) would have.
-- Safe: NO for a database that is not the course's own; the tests only pass
--   names they made (pgq_...). Used by tests only.
-- Parameters: name (text): the database.

SELECT count(*) FILTER (WHERE NOT pg_terminate_backend(pid, 5000))::int AS left_running
FROM pg_stat_activity
WHERE datname = :'name' AND pid <> pg_backend_pid();
