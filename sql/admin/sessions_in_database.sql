-- admin/sessions_in_database.sql: how many client sessions (but this one) are
-- connected to one database: after admin/end_sessions_in_database, the ones
-- that did not end. Run in a transaction of its own (the tests' admin session
-- is autocommit), so it looks afresh.
-- Client sessions only: an autovacuum worker is listed in pg_stat_activity under
-- the database it is visiting, for a moment every autovacuum_naptime (or longer,
-- vacuuming). Counted, it made a reused test database look busy and be made
-- anew: with naptime 1 s and one session updating rows, 522 of 20,208 looks at
-- pg_stat_activity saw one. It holds nothing a test could inherit, and a
-- TRUNCATE it blocks cancels it after deadlock_timeout (PostgreSQL 18,
-- src/backend/storage/lmgr/proc.c, ProcSleep: "blocking autovacuum").
-- Safe: yes, read-only. Used by tests only.
-- Parameters: name (text): the database.

SELECT count(*)::int AS sessions
FROM pg_stat_activity
WHERE datname = :'name' AND pid <> pg_backend_pid() AND backend_type = 'client backend';
