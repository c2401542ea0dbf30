-- lab/server_session.sql: LAB HELPER. When the server last started, and who
-- this session is: a restart moves the first; a container's settings show in the others.
-- Safe: yes, read-only.
-- Parameters: none.

SELECT pg_postmaster_start_time() AS started,
       current_user AS user_name,
       current_database() AS database_name;
