-- exercise/model/find_snapshot_holder.sql: the model answer to lesson 09's
-- exercise: the guide's activity query, narrowed to this database. A session
-- that holds a snapshot (backend_xmin) or a transaction id (backend_xid) is
-- what keeps VACUUM from removing dead versions; this query's own session
-- holds a snapshot while it runs, so it is left out.
-- Safe: yes, read-only.
-- Parameters: none.

SELECT pid, state, now() - xact_start AS xact_age, backend_xid, backend_xmin
FROM pg_stat_activity
WHERE datname = current_database()
  AND (backend_xid IS NOT NULL OR backend_xmin IS NOT NULL)
  AND pid <> pg_backend_pid()
ORDER BY xact_start;
