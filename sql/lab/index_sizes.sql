-- lab/index_sizes.sql: LAB HELPER. Each index on jobs and its size on disk.
-- Safe: yes, read-only.
-- Parameters: none.

SELECT indexrelname AS index, pg_relation_size(indexrelid) AS bytes
FROM pg_stat_user_indexes WHERE relname = 'jobs'
ORDER BY indexrelname;
