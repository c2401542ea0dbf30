-- lab/listen_addresses.sql: LAB HELPER. The addresses the server listens on
-- for TCP connections ('' when it takes Unix-socket connections only).
-- Safe: yes, read-only.
-- Parameters: none.

SELECT current_setting('listen_addresses');
