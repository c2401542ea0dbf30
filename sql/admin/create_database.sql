-- admin/create_database.sql: create a lesson's or a test's own database.
-- Safe: yes. Needs the CREATEDB privilege (ALTER ROLE name CREATEDB).
-- Parameters: name (identifier). Cannot run inside a transaction.

CREATE DATABASE :"name";
