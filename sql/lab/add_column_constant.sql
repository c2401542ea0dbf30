-- lab/add_column_constant.sql: LAB HELPER. Lesson 10d's migration: add a
-- lab-only column with a constant default. Since PostgreSQL 11 the default is
-- stored once in the catalog and no row is rewritten (the ALTER TABLE page's
-- Notes), but the statement still needs an ACCESS EXCLUSIVE lock on jobs.
-- Safe: NO outside a lesson's own database: it adds a column to jobs
--   (lab/drop_lab_columns.sql takes it away).
-- Parameters: none.

ALTER TABLE jobs ADD COLUMN lab_region text NOT NULL DEFAULT 'eu';
