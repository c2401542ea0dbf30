-- admin/server_version.sql: the server's version, short and numeric.
-- Safe: yes, read-only.
-- Parameters: none.

SELECT current_setting('server_version') AS version,
       current_setting('server_version_num')::int AS version_num;
