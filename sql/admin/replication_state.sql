-- admin/replication_state.sql: on a primary, each replica's name (its application_name), state,
-- whether commits wait for it (sync_state 'sync') and the WAL it has replayed, as LSNs.
-- Safe: yes, read-only.
-- Parameters: none.

SELECT application_name, state, sync_state, pg_current_wal_lsn() AS sent_up_to, replay_lsn
FROM pg_stat_replication ORDER BY application_name;
