-- admin/clone_database.sql: create a database as a copy of another (its
-- tables, indexes and rows), as the tests do from their template.
-- Safe: yes. Needs the CREATEDB privilege, and no session may be connected to
--   the template while it is copied.
-- Parameters: name (identifier), template (identifier). Cannot run inside a transaction.

CREATE DATABASE :"name" TEMPLATE :"template";
