-- exercise/role_rights.sql: LAB HELPER. What a role may do beyond its table
-- grants: superuser, CREATEDB, CREATEROLE, BYPASSRLS, role memberships (such as
-- pg_read_server_files), CREATE on the schema and TEMPORARY in this database.
-- Safe: yes, read-only.
-- Parameters: role (text).

SELECT r.rolsuper, r.rolcreatedb, r.rolcreaterole, r.rolbypassrls,
       (SELECT count(*) FROM pg_auth_members AS m WHERE m.member = r.oid) AS memberships,
       has_schema_privilege(r.rolname, 'public', 'CREATE') AS can_create,
       has_database_privilege(r.rolname, current_database(), 'TEMPORARY') AS can_temp
FROM pg_roles AS r WHERE r.rolname = :'role';
