-- lab/jobs_table_bytes.sql: LAB HELPER. The jobs table's size on disk with its
-- indexes and TOAST, and its row count, for bytes kept per job.
-- Safe: yes, reads only (the count scans the table: lab tables only).
-- Parameters: none.

SELECT pg_total_relation_size('jobs') AS bytes, (SELECT count(*) FROM jobs) AS row_count;
