-- admin/end_sessions_in_database.sql: end every session connected to one
-- database (but this one), waiting up to 5 s for each to go, so the tests can
-- empty a database they reuse as DROP DATABASE ... WITH (FORCE) would have.
-- How many were still there when asked is no answer to whether any is left:
-- a session that closed on its own a moment before is listed here (a
-- transaction's view of pg_stat_activity is taken once, at its first look) but
-- is gone before pg_terminate_backend is called, which then says false. So ask
-- admin/sessions_in_database afterwards, in a transaction of its own.
-- Client sessions only, as there: an autovacuum worker visiting is no test's.
-- Safe: NO for a database that is not the course's own; the tests only pass
--   names they made (pgq_...). Used by tests only.
-- Parameters: name (text): the database.

SELECT count(*) FILTER (WHERE pg_terminate_backend(pid, 5000))::int AS ended
FROM pg_stat_activity
WHERE datname = :'name' AND pid <> pg_backend_pid() AND backend_type = 'client backend';
