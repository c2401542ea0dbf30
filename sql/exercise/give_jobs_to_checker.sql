-- exercise/give_jobs_to_checker.sql: LAB HELPER. For the index exercise only:
-- make the checker role (made in exercise/learner_role) the owner of the scratch jobs
-- table and let it create in the schema, both of which CREATE INDEX requires,
-- so the learner's index is built, and the table analyzed and planned, by a
-- role that is no superuser. The learner's role owns nothing, in this exercise
-- as in every other. The right to create is taken back by
-- exercise/close_schema_to_checker as soon as the index is built.
-- Safe: only in a scratch database (the checker's own, reset on every check).
-- Parameters: role (identifier).

ALTER TABLE jobs OWNER TO :"role";
GRANT USAGE, CREATE ON SCHEMA public TO :"role";
