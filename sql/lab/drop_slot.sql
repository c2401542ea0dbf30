-- lab/drop_slot.sql: LAB HELPER. Drop a replication slot by name.
-- Safe: yes, for a slot the lab made.
-- Parameters: slot (text).

SELECT pg_drop_replication_slot(:'slot');
