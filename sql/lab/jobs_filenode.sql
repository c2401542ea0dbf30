-- lab/jobs_filenode.sql: LAB HELPER. The file that holds jobs' rows
-- (pg_relation_filenode): a statement that rewrites the table gives it a
-- new one; one that changes only the catalog keeps it.
-- Safe: yes, read-only.
-- Parameters: none.

SELECT pg_relation_filenode('jobs') AS filenode;
