-- exercise/name_session.sql: LAB HELPER. Give this session an
-- application_name, so the sessions a check stages all look alike by name.
-- Safe: yes, this session only.
-- Parameters: name (text).

SELECT set_config('application_name', :'name', false);
