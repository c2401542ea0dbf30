-- lab/table_dead_rows.sql: LAB HELPER. Live and dead row versions of the
-- tables whose name starts with prefix (a partitioned table's partitions too),
-- as the statistics system last heard.
-- Safe: yes, read-only.
-- Parameters: prefix (text).

SELECT relname, n_live_tup, n_dead_tup
FROM pg_stat_user_tables
WHERE relname LIKE :'prefix' || '%'
ORDER BY relname;
