-- lab/shared_buffers.sql: LAB HELPER. The server's shared_buffers as it shows
-- it (such as 128MB), which decides whether a Seq Scan of jobs is synchronized.
-- Safe: yes, read-only.
-- Parameters: none.

SELECT current_setting('shared_buffers') AS shared_buffers;
