-- lab/wal_level.sql: LAB HELPER. The server's wal_level (a logical slot needs 'logical').
-- Safe: yes, read-only.
-- Parameters: none.

SELECT current_setting('wal_level');
