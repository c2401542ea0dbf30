-- admin/drop_idle_database.sql: drop one of the course's databases, unless a session
-- is connected to it (an open notebook's kernel): PostgreSQL then refuses with
-- 55006 object_in_use and the database stays, with everything in it.
-- Safe: NO for any database that is not the course's own; `pgq-teach clean` passes
--   only names that start with the course's prefix (pgq_).
-- Parameters: name (identifier). Cannot run inside a transaction.

DROP DATABASE IF EXISTS :"name";
