-- exercise/close_schema_to_checker.sql: LAB HELPER. For the index exercise
-- only: take back the checker role's CREATE on the scratch schema once the
-- learner's index is built, so that ANALYZE, EXPLAIN and the size reads run as
-- a role that can create nothing.
-- Safe: only in a scratch database (the checker's own, reset on every check).
-- Parameters: role (identifier).

REVOKE CREATE ON SCHEMA public FROM :"role";
