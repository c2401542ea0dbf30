-- lab/add_column_volatile.sql: LAB HELPER. Add a lab-only column whose
-- default is volatile (clock_timestamp() differs row by row), so PostgreSQL
-- must write a value into every row: the whole table is rewritten into a new
-- file (a new relfilenode) under ACCESS EXCLUSIVE, every index rebuilt.
-- Safe: NO outside a lesson's own database: it rewrites jobs
--   (lab/drop_lab_columns.sql takes the column away).
-- Parameters: none.

ALTER TABLE jobs ADD COLUMN lab_noted_at timestamptz NOT NULL DEFAULT clock_timestamp();
