-- admin/max_connections.sql: how many client sessions the server accepts at once.
-- Safe: yes, read-only.
-- Parameters: none.

SELECT current_setting('max_connections')::int AS max_connections;
