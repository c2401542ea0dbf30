-- stats_sessions.sql: everything that can stop VACUUM and pruning removing
-- dead row versions of this database's tables, oldest horizon first, with
-- `reach` saying how far each one holds back:
--   * a transaction ID (backend_xid, from a first write or row lock), in ANY
--     database of the server: 'every database'. Every snapshot taken anywhere
--     while it runs gets that ID as its xmin (GetSnapshotData in
--     src/backend/storage/ipc/procarray.c, PostgreSQL 15 and 18), so each
--     session's pruning, and a VACUUM beside any other session's statement,
--     keeps what died after it. Prepared transactions (PREPARE TRANSACTION:
--     they outlive their session until COMMIT PREPARED or ROLLBACK PREPARED)
--     hold an ID the same way, so they are listed from every database too.
--   * a snapshot alone (backend_xmin, no ID) in this database: 'this
--     database'. In another database it holds back only that database and the
--     shared catalogs (ComputeXidHorizons, procarray.c, PostgreSQL 14+), so it
--     is not listed. A session here whose backend_xmin equals another row's
--     backend_xid is a bystander: its snapshot only carries that ID; end the
--     row with the ID (the tie is broken in its favour: it comes first).
--   * a walsender with no database carrying a standby's snapshot
--     (hot_standby_feedback on): 'every database'.
--   * a replication slot: its xmin (a physical slot fed by standby feedback)
--     holds back every database; its catalog_xmin (every logical slot) holds
--     back the system catalogs only, never jobs: 'system catalogs only'.
-- Safe: yes, read-only.
-- Parameters: none.

SELECT pid, datname, state, xact_age, backend_xid, backend_xmin, catalog_xmin, holder, reach
FROM (
  SELECT pid, datname, state, now() - xact_start AS xact_age, backend_xid, backend_xmin,
         NULL::xid AS catalog_xmin,
         CASE WHEN backend_type = 'walsender' THEN 'walsender (standby feedback)'
              ELSE 'session' END AS holder,
         CASE WHEN backend_xid IS NOT NULL OR datname IS NULL THEN 'every database'
              ELSE 'this database' END AS reach
  FROM pg_stat_activity
  WHERE (backend_xid IS NOT NULL
         OR (backend_xmin IS NOT NULL AND (datname = current_database() OR datname IS NULL)))
    AND pid <> pg_backend_pid()  -- not this monitoring session itself
  UNION ALL
  SELECT NULL, database, 'prepared: ' || gid, now() - prepared, transaction, NULL, NULL,
         'prepared transaction', 'every database'
  FROM pg_prepared_xacts
  UNION ALL
  SELECT active_pid, database, 'slot: ' || slot_name, NULL, NULL, xmin, catalog_xmin,
         'replication slot (' || slot_type || ')',
         CASE WHEN xmin IS NOT NULL THEN 'every database' ELSE 'system catalogs only' END
  FROM pg_replication_slots
  WHERE xmin IS NOT NULL OR catalog_xmin IS NOT NULL
) AS holders
ORDER BY greatest(age(backend_xid), age(backend_xmin)) DESC NULLS LAST,
         backend_xid IS NULL,  -- an ID's holder before the bystanders whose xmin it set
         age(catalog_xmin) DESC NULLS LAST,
         xact_age DESC NULLS LAST;
