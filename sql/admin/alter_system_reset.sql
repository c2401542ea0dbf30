-- admin/alter_system_reset.sql: put one server setting back to its default in
-- postgresql.auto.conf (undoes admin/alter_system.sql; it takes effect at the
-- next reload, admin/reload_config.sql, or restart, as the setting needs).
-- Safe: yes on the course's own embedded server; never on a server of your own (PGQ_DSN).
-- Parameters: name (identifier: the setting).

ALTER SYSTEM RESET :"name";
