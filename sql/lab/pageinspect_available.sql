-- lab/pageinspect_available.sql: LAB HELPER. Whether this server ships the
-- pageinspect extension (contrib), and whether it is installed here.
-- Safe: yes, read-only.
-- Parameters: none.

SELECT count(*) > 0 AS available, bool_or(installed_version IS NOT NULL) AS installed
FROM pg_available_extensions WHERE name = 'pageinspect';
