-- lab/database_bytes.sql: LAB HELPER. This database's size on disk, every
-- file of it: a dropped table's file counts no more once the DROP commits
-- (its first segment is cut to zero bytes then, and unlinked at the next
-- checkpoint), while a DELETE's dead rows stay in theirs.
-- Safe: yes, read-only.
-- Parameters: none.

SELECT pg_database_size(current_database()) AS bytes;
