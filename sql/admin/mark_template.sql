-- admin/mark_template.sql: mark a database as a template, as someone keeping one
-- to copy from would (the course never does; `pgq-teach clean` must leave it be).
-- Safe: yes; the database and everything in it stay. Used by tests only.
-- Parameters: name (identifier). Cannot run inside a transaction.

ALTER DATABASE :"name" IS_TEMPLATE true;
