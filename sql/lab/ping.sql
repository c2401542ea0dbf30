-- lab/ping.sql: LAB HELPER. One round trip that touches no table: the server
-- answers, so a connection works (the tests ask it after a restart).
-- Safe: yes, read-only.
-- Parameters: none.

SELECT 1;
