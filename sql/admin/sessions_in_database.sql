-- admin/sessions_in_database.sql: how many sessions (but this one) are
-- connected to one database: after admin/end_sessions_in_database, the ones
-- that did not end. Run in a transaction of its own (the tests' admin session
-- is autocommit), so it looks afresh.
-- Safe: yes, read-only. Used by tests only.
-- Parameters: name (text): the database.

SELECT count(*)::int AS sessions
FROM pg_stat_activity
WHERE datname = :'name' AND pid <> pg_backend_pid();
