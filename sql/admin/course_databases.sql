-- admin/course_databases.sql: the course's databases (every name the course makes
-- starts with its prefix, pgq_) and the bytes each takes on disk, for `pgq-teach clean`.
-- A template is left out: the course never marks one, and PostgreSQL refuses to drop it.
-- Safe: yes, read-only.
-- Parameters: prefix (text, such as pgq_; matched literally, so its _ is no wildcard).

SELECT datname AS name, pg_database_size(datname) AS bytes
FROM pg_database
WHERE starts_with(datname, :'prefix') AND datallowconn AND NOT datistemplate
ORDER BY datname;
