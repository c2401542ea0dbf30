-- lab/table_buffers.sql: LAB HELPER. How many buffers (8 kB pages) reads of
-- the jobs table and its indexes have touched so far, found in shared
-- buffers or read in: the steady measure of work, where time is noisy.
-- Safe: yes, read-only.
-- Parameters: none.

SELECT coalesce(heap_blks_hit, 0) + coalesce(heap_blks_read, 0)
       + coalesce(idx_blks_hit, 0) + coalesce(idx_blks_read, 0) AS buffers
FROM pg_statio_user_tables WHERE relname = 'jobs';
