-- lab/force_generic_plan.sql: LAB HELPER. Make this session's prepared
-- statements use one generic plan, the one built without the parameter
-- values, as a driver's prepared statement gets after five runs when that
-- plan looks no worse.
-- Safe: yes; it lasts until the session ends.
-- Parameters: none.

SET plan_cache_mode = force_generic_plan;
