-- lab/invalid_indexes.sql: LAB HELPER. The indexes of jobs the server marks
-- invalid (pg_index.indisvalid false): what a failed CREATE INDEX or REINDEX
-- CONCURRENTLY leaves behind, still updated on every write, never used by a
-- query, until someone drops it.
-- Safe: yes, read-only.
-- Parameters: none.

SELECT c.relname
FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
WHERE i.indrelid = 'jobs'::regclass AND NOT i.indisvalid
ORDER BY c.relname;
