-- lab/reindex_jobs.sql: LAB HELPER. Rebuild every index on jobs from the
-- rows there now, so sizes compare fresh indexes, as the guide did.
-- Safe: yes, in a lesson's database; it locks the table while it runs.
-- Parameters: none.

REINDEX TABLE jobs;
