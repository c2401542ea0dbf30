-- admin/can_create_database.sql: whether the current role may create databases.
-- Safe: yes, read-only.
-- Parameters: none.

SELECT rolcreatedb OR rolsuper AS can_create, current_user AS role
FROM pg_roles WHERE rolname = current_user;
