-- admin/in_recovery.sql: whether this server is a replica still replaying WAL (true) or a primary.
-- Safe: yes, read-only.
-- Parameters: none.

SELECT pg_is_in_recovery();
