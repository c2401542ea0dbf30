-- lab/create_lab_unique_concurrently.sql: LAB HELPER. A concurrent build that
-- must fail: a unique index on kind, which many jobs share. The failed build
-- leaves its index behind, marked INVALID (lab/invalid_indexes.sql): every
-- write still updates it, no query uses it, until it is dropped.
-- Safe: NO outside a lesson's own database: it leaves an invalid index
--   (lab/drop_index.sql drops it).
-- Parameters: none.

CREATE UNIQUE INDEX CONCURRENTLY lab_kind_key ON jobs (kind);
