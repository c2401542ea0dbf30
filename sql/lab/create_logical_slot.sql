-- lab/create_logical_slot.sql: LAB HELPER. Create a logical replication slot
-- (test_decoding, shipped with the server) that nobody reads: it keeps its
-- catalog_xmin, and holds back the system catalogs, until dropped.
-- Safe: no: drop it with lab/drop_slot.sql, or it keeps WAL for ever.
-- Parameters: slot (text).

SELECT pg_create_logical_replication_slot(:'slot', 'test_decoding');
