-- lab/grant_jobs_read.sql: LAB HELPER. Let a lab role read jobs, enough for a
-- forgotten transaction to start.
-- Safe: only for roles the course made.
-- Parameters: name (identifier).

GRANT SELECT ON jobs TO :"name";
