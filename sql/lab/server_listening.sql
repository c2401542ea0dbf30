-- lab/server_listening.sql: LAB HELPER. Where the server accepts connections:
-- its TCP addresses (empty: none) and its Unix socket directories.
-- Safe: yes, read-only. Needs a superuser or pg_read_all_settings.
-- Parameters: none.

SELECT current_setting('listen_addresses') AS listen_addresses,
       current_setting('unix_socket_directories') AS unix_socket_directories;
