-- lab/show_naptime.sql: LAB HELPER. The autovacuum_naptime in force now.
-- Safe: yes, read-only.
-- Parameters: none.

SELECT current_setting('autovacuum_naptime') AS naptime;
