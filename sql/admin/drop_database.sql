-- admin/drop_database.sql: drop a lesson's or a test's database, ending any
-- session still connected to it.
-- Safe: NO for any database that is not the course's own; the library only
--   passes names it made (pgq_...).
-- Parameters: name (identifier). Cannot run inside a transaction.

DROP DATABASE IF EXISTS :"name" WITH (FORCE);
