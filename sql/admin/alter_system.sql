-- admin/alter_system.sql: set one server setting in postgresql.auto.conf (it takes
-- effect at the next reload, admin/reload_config.sql, or restart, as the setting needs).
-- Safe: yes on the course's own embedded server, where `embedded.start` runs it for
-- the WAL sizes, once; never on a server of your own (PGQ_DSN).
-- Parameters: name (identifier: the setting), value (text, such as 256MB).

ALTER SYSTEM SET :"name" = :'value';
