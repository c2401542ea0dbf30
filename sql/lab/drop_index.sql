-- lab/drop_index.sql: LAB HELPER. Drop one index by name, if it exists (the
-- invalid _ccnew or _ccold index a failed REINDEX CONCURRENTLY left).
-- Safe: NO outside a lesson's own database: it drops the index you name.
-- Parameters: name (identifier).

DROP INDEX IF EXISTS :"name";
