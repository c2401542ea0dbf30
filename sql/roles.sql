-- roles.sql: the least-privilege role that producers and workers log in as
-- (queue_worker in production). It can enqueue, claim, complete, fail, extend
-- a lease, reap and requeue dead jobs: SELECT on jobs, INSERT of the columns
-- enqueue.sql writes, UPDATE of the columns the queue's statements change,
-- SELECT on job_kinds, and a shared rate limit's token buckets. It
-- cannot DELETE (cleanup_done.sql is maintenance: run it as the table's owner),
-- TRUNCATE, rewrite a job's kind or payload, write enqueued_at or event_id
-- (their defaults write them, once), or ALTER or DROP the table (only its
-- owner can). The identity column needs no grant on its sequence. Its
-- sessions end when they sit idle inside a transaction for idle_timeout, so a
-- stuck worker cannot keep row locks or hold back VACUUM (the guide: the
-- server default, 0, means off; it suggests '1min').
-- Safe: yes, idempotent; one transaction through pgq_teach.statements.run
--   (psql runs it statement by statement unless given -1). Roles are
--   cluster-wide: the role is created once if missing, its password and
--   timeout are set on every run. Privileges are per database: run it in each
--   database that holds a jobs table, as that table's owner or a superuser.
--   Each run revokes anything else granted on jobs, then grants exactly this.
--   A new timeout applies to sessions that start afterwards.
-- Parameters: role (identifier, queue_worker in production), password (text),
--   idle_timeout (text, for example '1min').
-- psql: psql -1 -v role=queue_worker -v password=... -v idle_timeout=1min -f sql/roles.sql
--   A server with log_statement = 'ddl' or 'all' logs the password it is sent;
--   there, change it afterwards with psql's \password queue_worker.

SET pgq.worker_role TO :"role";

DO $roles$
BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = current_setting('pgq.worker_role')) THEN
    BEGIN
      EXECUTE format('CREATE ROLE %I NOLOGIN', current_setting('pgq.worker_role'));
    EXCEPTION WHEN duplicate_object OR unique_violation THEN
      NULL;  -- another session created it a moment ago: fine
    END;
  END IF;
END
$roles$;

ALTER ROLE :"role" LOGIN PASSWORD :'password';
ALTER ROLE :"role" SET idle_in_transaction_session_timeout = :'idle_timeout';

REVOKE ALL ON TABLE jobs FROM :"role";
GRANT USAGE ON SCHEMA public TO :"role";
GRANT SELECT,
      INSERT (kind, payload, run_at, max_attempts),
      UPDATE (status, run_at, attempts, fence_token, leased_until, last_error, attempted_at,
              finished_at)
  ON TABLE jobs TO :"role";
-- Each kind's policy is read (enqueue.sql, the per-kind failures), never
-- written: an operator sets it. The shared rate limit's buckets are taken
-- from by every Worker (take_tokens.sql: an insert, or an update of its row).
REVOKE ALL ON TABLE job_kinds, rate_limits FROM :"role";
GRANT SELECT ON TABLE job_kinds TO :"role";
GRANT SELECT, INSERT, UPDATE ON TABLE rate_limits TO :"role";

RESET pgq.worker_role;
