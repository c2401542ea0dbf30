-- exercise/index_shape.sql: LAB HELPER. Each index on the jobs table: its
-- name, its size in bytes, its key columns in order (an expression shows as
-- '(expression)'; INCLUDE columns are left out) and its predicate as the server
-- prints it (NULL for none), from the catalogs.
-- Safe: read-only; any role may read it (the index exercise reads it as the
--   checker role, never as a superuser).
-- Parameters: none.

SELECT c.relname AS name,
       pg_relation_size(i.indexrelid) AS bytes,
       ARRAY(SELECT coalesce(a.attname::text, '(expression)')
             FROM unnest(i.indkey::int2[]) WITH ORDINALITY AS k (attnum, n)
             LEFT JOIN pg_attribute AS a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
             WHERE k.n <= i.indnkeyatts
             ORDER BY k.n) AS key_columns,
       pg_get_expr(i.indpred, i.indrelid) AS predicate
FROM pg_index AS i
JOIN pg_class AS c ON c.oid = i.indexrelid
WHERE i.indrelid = 'jobs'::regclass
ORDER BY c.relname;
