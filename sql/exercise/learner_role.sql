-- exercise/learner_role.sql: LAB HELPER. The two roles the "Your turn" checker
-- uses in a scratch database made for the check.
-- The learner's role (role) runs the learner's own SQL: it can read and change
-- the jobs table there and nothing else. No superuser, no CREATEDB or
-- CREATEROLE, no membership in any role (so no pg_read_server_files or
-- pg_execute_server_program), no CREATE on the schema, no temporary tables, no
-- right to signal another session (pg_cancel_backend, pg_terminate_backend),
-- a statement and lock timeout on every session, and a temp_file_limit (a
-- setting only a superuser may change, so the role cannot lift it) on the disk
-- its sorts and hashes may spill to.
-- The checker's role (checker) owns the jobs table in the index exercise only
-- (exercise/give_jobs_to_checker): no superuser, no membership, nothing granted
-- here. Whatever defaults either role was given before (ALTER ROLE ... SET, by
-- anyone) are reset before its own are set.
-- Safe: only in a scratch database (the checker's own, pgq_scratch_...): it
--   revokes CREATE on the schema, TEMPORARY on the database, and EXECUTE on the
--   two signalling functions from PUBLIC there. Roles are cluster-wide: each is
--   created once if missing; passwords, limits and defaults are set on every run.
-- Parameters: role (identifier), checker (identifier), password (text),
--   checker_password (text), database (identifier), statement_timeout (text,
--   for example '3s'), lock_timeout (text), checker_timeout (text),
--   temp_file_limit (text, for example '64MB').
-- Concurrency: two checks setting the roles up at once (two workers, or a notebook
--   and the CLI, on one server) would update the same pg_authid rows, and the
--   second failed with "tuple concurrently updated". They work in different
--   scratch databases, and an advisory lock belongs to one database, so the
--   script locks pg_authid itself (a shared catalog: the lock holds across the
--   cluster) in SHARE ROW EXCLUSIVE mode. That mode conflicts with itself, so the
--   setups take turns, and with the ROW EXCLUSIVE lock a change to a role's own
--   row takes (LOGIN, PASSWORD, CONNECTION LIMIT), not with the ACCESS SHARE a
--   login takes; ALTER ROLE ... SET and RESET write pg_db_role_setting instead,
--   which this lock leaves free. The script is sent as one query message, which
--   the server runs as one transaction: the lock is held until its COMMIT.

SET pgq.learner_role TO :"role";
SET pgq.checker_role TO :"checker";
LOCK TABLE pg_catalog.pg_authid IN SHARE ROW EXCLUSIVE MODE;

DO $learner$
DECLARE
  name text;
BEGIN
  FOREACH name IN ARRAY ARRAY[current_setting('pgq.learner_role'), current_setting('pgq.checker_role')] LOOP
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = name) THEN
      BEGIN
        EXECUTE format('CREATE ROLE %I NOLOGIN', name);
      EXCEPTION WHEN duplicate_object OR unique_violation THEN
        NULL;  -- another session created it a moment ago: fine
      END;
    END IF;
  END LOOP;
END
$learner$;

ALTER ROLE :"role" LOGIN PASSWORD :'password' NOSUPERUSER NOCREATEDB NOCREATEROLE
  NOREPLICATION NOBYPASSRLS NOINHERIT CONNECTION LIMIT 40;
ALTER ROLE :"role" RESET ALL;
ALTER ROLE :"role" IN DATABASE :"database" RESET ALL;
ALTER ROLE :"role" SET statement_timeout = :'statement_timeout';
ALTER ROLE :"role" SET lock_timeout = :'lock_timeout';
ALTER ROLE :"role" SET idle_in_transaction_session_timeout = '30s';
ALTER ROLE :"role" SET temp_file_limit = :'temp_file_limit';

ALTER ROLE :"checker" LOGIN PASSWORD :'checker_password' NOSUPERUSER NOCREATEDB NOCREATEROLE
  NOREPLICATION NOBYPASSRLS NOINHERIT CONNECTION LIMIT 10;
ALTER ROLE :"checker" RESET ALL;
ALTER ROLE :"checker" IN DATABASE :"database" RESET ALL;
ALTER ROLE :"checker" SET statement_timeout = :'checker_timeout';
ALTER ROLE :"checker" SET temp_file_limit = :'temp_file_limit';

REVOKE CREATE ON SCHEMA public FROM PUBLIC;
REVOKE TEMPORARY ON DATABASE :"database" FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION pg_terminate_backend(integer, bigint) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION pg_cancel_backend(integer) FROM PUBLIC;
REVOKE ALL ON TABLE jobs FROM :"role";
GRANT USAGE ON SCHEMA public TO :"role";
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE jobs TO :"role";

RESET pgq.learner_role;
RESET pgq.checker_role;
