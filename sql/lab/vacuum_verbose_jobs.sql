-- lab/vacuum_verbose_jobs.sql: LAB HELPER. VACUUM the jobs table and report
-- what it did (removed, remaining, dead but not yet removable) as INFO
-- messages, which the client collects.
-- Safe: yes. It cannot run inside a transaction block.
-- Parameters: none.

VACUUM (VERBOSE) jobs;
