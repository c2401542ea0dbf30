-- lab/vacuum_jobs_verbose.sql: LAB HELPER. VACUUM the jobs table and report
-- what it did. The report arrives as INFO messages (psql prints them; the
-- course reads them with a notice handler): look for the line
-- "tuples: N removed, N remain, N are dead but not yet removable".
-- Safe: yes. Must run outside a transaction block.
-- Parameters: none.

VACUUM (VERBOSE) jobs;
