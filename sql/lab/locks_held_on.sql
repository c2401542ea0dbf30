-- lab/locks_held_on.sql: LAB HELPER. The table locks one session holds on one
-- table, as the server's lock manager reports them (pg_locks).
-- Safe: yes, read-only.
-- Parameters: pid (int, the session's backend pid), table (text, the table's name).

SELECT mode
FROM pg_locks
WHERE pid = :pid AND locktype = 'relation' AND relation = to_regclass(:'table') AND granted
ORDER BY mode;
