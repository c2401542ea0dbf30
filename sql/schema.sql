-- schema.sql: the store's orders table and the jobs table the course builds on.
-- Safe: yes. Creates what is missing and leaves existing tables and rows alone.
-- Parameters: none.
-- psql: \i sql/schema.sql

CREATE TABLE IF NOT EXISTS orders (
  id         bigserial     PRIMARY KEY,
  email      text          NOT NULL,
  total      numeric(10,2) NOT NULL,
  created_at timestamptz   NOT NULL DEFAULT now()
);

CREATE TABLE IF NOT EXISTS jobs (
  id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  kind         text        NOT NULL,
  payload      jsonb       NOT NULL,
  status       text        NOT NULL DEFAULT 'ready'
               CHECK (status IN ('ready', 'running', 'done', 'dead')),
  run_at       timestamptz NOT NULL DEFAULT now(),
  attempts     int         NOT NULL DEFAULT 0,
  fence_token  bigint      NOT NULL DEFAULT 0,
  max_attempts int         NOT NULL DEFAULT 5,
  leased_until timestamptz,
  last_error   text
);

-- The fencing token: every claim adds one and nothing ever resets it, so a
-- token names one claim over the job's whole life. attempts is the retry
-- count, and requeue_dead.sql resets it, so it cannot be the fence (a worker
-- from before a requeue would hold the same attempts as the next claim).
-- A database made before the column existed gets it here.
ALTER TABLE jobs ADD COLUMN IF NOT EXISTS fence_token bigint NOT NULL DEFAULT 0;

-- Only the rows the hot queries look for are indexed, so both indexes stay
-- tiny however many done rows pile up (guide, index section).
CREATE INDEX IF NOT EXISTS jobs_ready_idx   ON jobs (run_at)       WHERE status = 'ready';
CREATE INDEX IF NOT EXISTS jobs_running_idx ON jobs (leased_until) WHERE status = 'running';
