-- lab/create_lab_index.sql: LAB HELPER. A plain CREATE INDEX on jobs: it
-- takes a SHARE lock, which lets reads through but stops every INSERT,
-- UPDATE and DELETE (claims, completions, heartbeats, enqueues) until the
-- build commits.
-- Safe: NO outside a lesson's own database: it adds an index
--   (lab/drop_index.sql drops it).
-- Parameters: none.

CREATE INDEX lab_kind_idx ON jobs (kind);
