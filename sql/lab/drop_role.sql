-- lab/drop_role.sql: LAB HELPER. Drop a role a lesson or test made.
-- Safe: only for roles the course made.
-- Parameters: name (identifier).

DROP ROLE IF EXISTS :"name";
