-- exercise/learner_role.sql: LAB HELPER. The role the "Your turn" checker runs
-- the learner's own SQL as, in a scratch database made for the check: it can
-- read and change the jobs table there and nothing else. No superuser, no
-- CREATEDB or CREATEROLE, no membership in any role (so no pg_read_server_files
-- or pg_execute_server_program), no CREATE on the schema, no temporary tables,
-- and a statement and lock timeout on every session.
-- Safe: only in a scratch database (the checker's own, pgq_scratch_...): it
--   revokes CREATE on the schema and TEMPORARY on the database from PUBLIC there.
--   Roles are cluster-wide: the role is created once if missing; its password
--   and limits are set on every run.
-- Parameters: role (identifier), password (text), database (identifier),
--   statement_timeout (text, for example '3s'), lock_timeout (text).

SET pgq.learner_role TO :"role";

DO $learner$
BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = current_setting('pgq.learner_role')) THEN
    BEGIN
      EXECUTE format('CREATE ROLE %I NOLOGIN', current_setting('pgq.learner_role'));
    EXCEPTION WHEN duplicate_object OR unique_violation THEN
      NULL;  -- another session created it a moment ago: fine
    END;
  END IF;
END
$learner$;

ALTER ROLE :"role" LOGIN PASSWORD :'password' NOSUPERUSER NOCREATEDB NOCREATEROLE
  NOREPLICATION NOBYPASSRLS NOINHERIT CONNECTION LIMIT 40;
ALTER ROLE :"role" SET statement_timeout = :'statement_timeout';
ALTER ROLE :"role" SET lock_timeout = :'lock_timeout';
ALTER ROLE :"role" SET idle_in_transaction_session_timeout = '30s';

REVOKE CREATE ON SCHEMA public FROM PUBLIC;
REVOKE TEMPORARY ON DATABASE :"database" FROM PUBLIC;
REVOKE ALL ON TABLE jobs FROM :"role";
GRANT USAGE ON SCHEMA public TO :"role";
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE jobs TO :"role";

RESET pgq.learner_role;
