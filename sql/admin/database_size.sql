-- admin/database_size.sql: the bytes one database takes on disk (its folder
-- under base/, all forks of every relation in it).
-- Safe: yes, read-only.
-- Parameters: name (text): the database's name.

SELECT pg_database_size(:'name');
