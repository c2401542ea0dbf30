-- admin/replication_slots.sql: the names of this server's replication slots.
-- Safe: yes, read-only.
-- Parameters: none.

SELECT slot_name FROM pg_replication_slots ORDER BY slot_name;
