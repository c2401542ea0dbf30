-- admin/file_setting.sql: what the configuration files say for one setting now (the
-- last line that sets it, postgresql.auto.conf last), before any reload applies it.
-- Safe: yes, read-only. Needs a superuser.
-- Parameters: name (text, the setting's name).

SELECT setting FROM pg_file_settings WHERE name = :'name' ORDER BY seqno DESC LIMIT 1;
