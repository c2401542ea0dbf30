-- lab/set_lock_timeout.sql: LAB HELPER. Give up on any lock wait after
-- :timeout in this session (SQLSTATE 55P03), so a lab that shows a wait ends.
-- Safe: yes, this session only.
-- Parameters: timeout (text, for example '1s').

SET lock_timeout = :'timeout';
