-- lab/vacuum_jobs.sql: LAB HELPER. VACUUM the jobs table now (outside any
-- transaction), so an experiment starts with no dead row versions.
-- Safe: yes.
-- Parameters: none.

VACUUM jobs;
