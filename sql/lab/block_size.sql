-- lab/block_size.sql: LAB HELPER. The server's page size in bytes, fixed when
-- PostgreSQL was compiled (8192 in a standard build). The NOTIFY payload limit
-- is derived from it.
-- Safe: yes, read-only.
-- Parameters: none.

SELECT current_setting('block_size')::int AS block_size;
