-- exercise/session_waits_on_lock.sql: LAB HELPER. Whether the session with
-- this backend pid is waiting for a heavyweight lock (a row another
-- transaction holds, for one), as pg_stat_activity shows it now. The claim
-- check's two-claims scene asks it, so the first claim commits only once the
-- second is blocked behind it, or done.
-- Safe: yes, read-only; it reads the server's view of sessions, no table.
-- Parameters: pid (int).

SELECT coalesce(bool_or(wait_event_type = 'Lock'), false)
FROM pg_stat_activity WHERE pid = :pid;
