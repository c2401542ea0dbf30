-- lab/fault_setup.sql: LAB HELPER. The ledgers the fault and load runs judge
-- the queue by, written on the server as things happen so a SIGKILLed worker
-- loses nothing (but fault_lost, below, loaded from the workers' files):
-- fault_calls, an append-only log of handler calls (a 'start' row when a call
-- begins, an 'effect' row when it tries its effect, saying whether it applied);
-- fault_effects, the handlers' one effect per job (its primary key is the
-- idempotency key); fault_outcomes, what workers were told (done, fenced,
-- retried, dead, or not_started: no longer held when its turn came);
-- fault_strikes and fault_lost (below); and fault_transitions, every update
-- of a jobs row, written by a trigger in the same transaction as the update
-- itself, with the session's application_name (each worker process sets its
-- own name; its heartbeat session adds " heartbeat") as its actor.
-- Safe: only in a lab's own database: it adds a trigger to jobs, which slows
--   every update of a job a little. Creates what is missing; run
--   lab/fault_reset.sql to empty the ledgers.
-- Parameters: none.

CREATE TABLE IF NOT EXISTS fault_calls (
  id       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  job_id   bigint      NOT NULL,
  attempts int         NOT NULL,
  fence_token bigint,  -- a start's claim ('effect' rows leave it empty)
  worker   text        NOT NULL,
  step     text        NOT NULL CHECK (step IN ('start', 'effect')),
  applied  boolean,
  at       timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX IF NOT EXISTS fault_calls_job_idx ON fault_calls (job_id, attempts);
CREATE INDEX IF NOT EXISTS fault_calls_worker_idx ON fault_calls (worker, id);

CREATE TABLE IF NOT EXISTS fault_effects (
  job_id   bigint      PRIMARY KEY,
  attempts int         NOT NULL,
  worker   text        NOT NULL,
  at       timestamptz NOT NULL DEFAULT clock_timestamp()
);

CREATE TABLE IF NOT EXISTS fault_outcomes (
  job_id   bigint      NOT NULL,
  attempts int         NOT NULL,
  fence_token bigint NOT NULL,  -- the claim the worker was told about
  worker   text        NOT NULL,
  outcome  text        NOT NULL,
  at       timestamptz NOT NULL DEFAULT clock_timestamp()
);

-- fault_strikes: the faults that take a job from a worker by right (a SIGKILL,
-- a SIGSTOP past the lease), written by the orchestrator as it strikes; a
-- pause has an end, a kill none.
CREATE TABLE IF NOT EXISTS fault_strikes (
  worker text        NOT NULL,
  kind   text        NOT NULL CHECK (kind IN ('kill', 'pause')),
  at     timestamptz NOT NULL DEFAULT clock_timestamp(),
  until  timestamptz
);

-- fault_lost: a worker learnt it no longer held a claim (a beat found it
-- fenced, or it gave the lease up at its end), at the worker's own clock. The
-- workers note it in files, which a SIGKILL cannot lose; the run loads them
-- once every worker has stopped (lab/fault_lost.sql).
CREATE TABLE IF NOT EXISTS fault_lost (
  job_id   bigint      NOT NULL,
  attempts int         NOT NULL,
  fence_token bigint,
  worker   text        NOT NULL,
  at       timestamptz NOT NULL
);

CREATE TABLE IF NOT EXISTS fault_transitions (
  id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  job_id       bigint      NOT NULL,
  old_status   text        NOT NULL,
  new_status   text        NOT NULL,
  old_attempts int         NOT NULL,
  new_attempts int         NOT NULL,
  max_attempts int         NOT NULL,
  new_fence_token bigint,  -- the job's token after the update: a move into running names its claim
  actor        text        NOT NULL DEFAULT current_setting('application_name'),
  at           timestamptz NOT NULL DEFAULT clock_timestamp()
);
-- A log made before the actor was recorded gains the two columns the verdict reads.
ALTER TABLE fault_transitions ADD COLUMN IF NOT EXISTS id bigint GENERATED ALWAYS AS IDENTITY;
ALTER TABLE fault_transitions
  ADD COLUMN IF NOT EXISTS actor text NOT NULL DEFAULT current_setting('application_name');
-- A log made before claims were named by their token gains those columns.
ALTER TABLE fault_calls ADD COLUMN IF NOT EXISTS fence_token bigint;
ALTER TABLE fault_lost ADD COLUMN IF NOT EXISTS fence_token bigint;
ALTER TABLE fault_outcomes ADD COLUMN IF NOT EXISTS fence_token bigint;
ALTER TABLE fault_transitions ADD COLUMN IF NOT EXISTS new_fence_token bigint;
CREATE INDEX IF NOT EXISTS fault_transitions_job_idx ON fault_transitions (job_id, id);

CREATE OR REPLACE FUNCTION fault_record_transition() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  INSERT INTO fault_transitions
    (job_id, old_status, new_status, old_attempts, new_attempts, max_attempts, new_fence_token)
  VALUES (NEW.id, OLD.status, NEW.status, OLD.attempts, NEW.attempts, NEW.max_attempts, NEW.fence_token);
  RETURN NULL;
END
$fn$;

DROP TRIGGER IF EXISTS fault_record_transition ON jobs;
CREATE TRIGGER fault_record_transition AFTER UPDATE ON jobs
  FOR EACH ROW EXECUTE FUNCTION fault_record_transition();
