-- admin/database_exists.sql: whether a database exists.
-- Safe: yes, read-only.
-- Parameters: name (text).

SELECT 1 FROM pg_database WHERE datname = :'name';
