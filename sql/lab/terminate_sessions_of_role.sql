-- lab/terminate_sessions_of_role.sql: LAB HELPER. End every session logged in
-- as a lab role, so the role can be dropped.
-- Safe: only for roles the course made.
-- Parameters: name (text).

SELECT pid, pg_terminate_backend(pid)
FROM pg_stat_activity
WHERE usename = :'name' AND pid <> pg_backend_pid();
