-- stats_sessions.sql: everything that can stop VACUUM removing dead row
-- versions, oldest first: sessions that hold a transaction ID or a snapshot
-- (a walsender among them holds its standby's snapshot when the standby runs
-- with hot_standby_feedback on), prepared transactions (PREPARE TRANSACTION:
-- they outlive their session and hold their ID until COMMIT PREPARED or
-- ROLLBACK PREPARED), and replication slots (a slot keeps its xmin, or its
-- catalog_xmin, while its consumer is away). Sessions and prepared
-- transactions are this database's only: since PostgreSQL 14 one in another
-- database holds back only the shared catalogs, not this database's tables
-- (a REPEATABLE READ transaction there leaves VACUUM of jobs removing all).
-- Walsenders and slots hold back every database, so they are all listed.
-- Safe: yes, read-only.
-- Parameters: none.

SELECT pid, state, now() - xact_start AS xact_age, backend_xid, backend_xmin,
       CASE WHEN backend_type = 'walsender' THEN 'walsender (standby feedback)'
            ELSE 'session' END AS holder
FROM pg_stat_activity
WHERE (backend_xid IS NOT NULL OR backend_xmin IS NOT NULL)
  AND (datname = current_database() OR backend_type = 'walsender')
  AND pid <> pg_backend_pid()  -- not this monitoring session itself
UNION ALL
SELECT NULL, 'prepared: ' || gid, now() - prepared, transaction, NULL,
       'prepared transaction'
FROM pg_prepared_xacts
WHERE database = current_database()
UNION ALL
SELECT active_pid, 'slot: ' || slot_name, NULL, NULL, coalesce(xmin, catalog_xmin),
       'replication slot'
FROM pg_replication_slots
WHERE xmin IS NOT NULL OR catalog_xmin IS NOT NULL
ORDER BY xact_age DESC NULLS LAST;
