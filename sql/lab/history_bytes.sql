-- lab/history_bytes.sql: LAB HELPER. Each table of jobs_history (the parent
-- and its partitions) with its size on disk, indexes and TOAST included: what
-- a DELETE keeps (its dead rows stay in the file until VACUUM) and a DROP
-- gives back.
-- Safe: yes, read-only.
-- Parameters: none.

SELECT relid::regclass::text AS name, pg_total_relation_size(relid) AS bytes
FROM pg_partition_tree('jobs_history')
ORDER BY name;
