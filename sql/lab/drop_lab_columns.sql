-- lab/drop_lab_columns.sql: LAB HELPER. Take lesson 10d's lab-only columns,
-- index and constraint off jobs again, whichever are there.
-- Safe: NO outside a lesson's own database: it drops them.
-- Parameters: none.

ALTER TABLE jobs
  DROP COLUMN IF EXISTS lab_region,
  DROP COLUMN IF EXISTS lab_noted_at,
  DROP CONSTRAINT IF EXISTS lab_attempts_known;
