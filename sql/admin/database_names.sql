-- admin/database_names.sql: every database's name on the server, so a test can
-- show that a refused command created none.
-- Safe: yes, read-only.
-- Parameters: none.

SELECT datname FROM pg_database ORDER BY datname;
