-- exercise/index_sizes.sql: LAB HELPER. The jobs table's indexes, each with its
-- size on disk and its definition.
-- Safe: yes, read-only.
-- Parameters: none.

SELECT c.relname AS name, pg_relation_size(i.indexrelid) AS bytes, pg_get_indexdef(i.indexrelid) AS definition
FROM pg_index AS i JOIN pg_class AS c ON c.oid = i.indexrelid
WHERE i.indrelid = 'jobs'::regclass
ORDER BY c.relname;
