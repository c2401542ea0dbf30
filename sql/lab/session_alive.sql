-- lab/session_alive.sql: LAB HELPER. Whether a server process (one session)
-- still exists.
-- Safe: yes, read-only.
-- Parameters: pid (int).

SELECT EXISTS (SELECT FROM pg_stat_activity WHERE pid = :pid) AS alive;
