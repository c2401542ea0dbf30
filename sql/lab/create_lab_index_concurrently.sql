-- lab/create_lab_index_concurrently.sql: LAB HELPER. The same index built
-- CONCURRENTLY: a SHARE UPDATE EXCLUSIVE lock, which no write waits for; it
-- scans the table twice and waits for older transactions instead. It cannot
-- run inside a transaction block.
-- Safe: NO outside a lesson's own database: it adds an index
--   (lab/drop_index.sql drops it).
-- Parameters: none.

CREATE INDEX CONCURRENTLY lab_kind_idx ON jobs (kind);
