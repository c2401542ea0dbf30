-- exercise/give_jobs_to_learner.sql: LAB HELPER. For the index exercise only:
-- make the learner role the owner of the scratch jobs table and let it create
-- in the scratch schema, both of which CREATE INDEX requires. Every other
-- check leaves the table with the course's role and the schema closed.
-- Safe: only in a scratch database (the checker's own, reset on every check).
-- Parameters: role (identifier).

ALTER TABLE jobs OWNER TO :"role";
GRANT CREATE ON SCHEMA public TO :"role";
