-- admin/create_replication_slot.sql: create a physical replication slot on a primary, so the
-- primary keeps every WAL segment its replica has not yet received (the failover drill's pair).
-- Safe: on a throwaway server only: a slot nobody reads keeps WAL for good (and, with
--   hot_standby_feedback, holds back VACUUM), so whoever creates one drops it
--   (admin/drop_replication_slot.sql). Needs a superuser or the REPLICATION attribute.
-- Parameters: slot (text, the slot's name).

SELECT slot_name FROM pg_create_physical_replication_slot(:'slot');
