-- migration_held_locks.sql: the table locks this session's open transaction
-- already holds on one table. A migration run inside such a transaction would
-- keep them through every lock wait and retry, so the helper refuses it.
-- Safe: yes, read-only.
-- Parameters: table (text, the table's name).

SELECT mode
FROM pg_locks
WHERE pid = pg_backend_pid() AND locktype = 'relation' AND relation = to_regclass(:'table') AND granted
ORDER BY mode;
