-- stats_sessions.sql: sessions that hold a transaction ID or a snapshot, the
-- ones that can stop VACUUM removing dead row versions. Oldest first.
-- Safe: yes, read-only.
-- Parameters: none.

SELECT pid, state, now() - xact_start AS xact_age, backend_xid, backend_xmin
FROM pg_stat_activity
WHERE (backend_xid IS NOT NULL OR backend_xmin IS NOT NULL)
  AND pid <> pg_backend_pid()  -- not this monitoring session itself
ORDER BY xact_start;
