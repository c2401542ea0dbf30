-- lab/set_autovacuum_naptime.sql: LAB HELPER. How often the autovacuum
-- launcher looks at each database (default 1min). Server-wide: the course
-- runs it only on a server it started itself (the embedded one), and resets
-- it afterwards with lab/reset_autovacuum_naptime.sql. Takes effect after
-- lab/reload_conf.sql.
-- Safe: NO on a server you share; superuser only.
-- Parameters: naptime (text, for example '1s').

ALTER SYSTEM SET autovacuum_naptime = :'naptime';
