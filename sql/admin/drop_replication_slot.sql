-- admin/drop_replication_slot.sql: drop a replication slot if it exists (none when it does not).
-- An active slot (a replica still streaming from it) cannot be dropped: stop the replica first.
-- Safe: on the server that created it, after its replica has stopped.
-- Parameters: slot (text, the slot's name).

SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = :'slot';
