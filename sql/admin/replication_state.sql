-- admin/replication_state.sql: on a primary, each replica's name (its application_name), state,
-- whether commits wait for it (sync_state 'sync'), the WAL it has replayed, as LSNs, and
-- whether it has replayed all this server has written so far (caught_up).
-- Safe: yes, read-only.
-- Parameters: none.

SELECT application_name, state, sync_state, pg_current_wal_lsn() AS written, replay_lsn,
       coalesce(replay_lsn >= pg_current_wal_lsn(), false) AS caught_up
FROM pg_stat_replication ORDER BY application_name;
