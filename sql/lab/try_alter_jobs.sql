-- lab/try_alter_jobs.sql: LAB HELPER. Try to change the jobs table's
-- definition, as a compromised or careless worker might; a worker role must
-- be refused (SQLSTATE 42501, must be owner of table jobs).
-- Safe: NO as the table's owner: it adds a column. Run it as a restricted role.
-- Parameters: none.

ALTER TABLE jobs ADD COLUMN tampered boolean;
