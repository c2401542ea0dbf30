-- lab/reset_autovacuum_naptime.sql: LAB HELPER. Put autovacuum_naptime back
-- to the server's default (undoes lab/set_autovacuum_naptime.sql); takes
-- effect after lab/reload_conf.sql.
-- Safe: yes on the course's own server; superuser only.
-- Parameters: none.

ALTER SYSTEM RESET autovacuum_naptime;
