-- schema.sql: the store's orders table, the jobs table the course builds on,
-- and job_kinds, the retry policy and job timeout per kind.
-- Safe: yes. Creates what is missing and leaves existing tables and rows alone.
--   A jobs table made before a column existed gains it here, rows kept, on the
--   next open of its database (pgq_teach.databases.open_database runs this
--   file every time). Each column's value for the rows already there is chosen
--   below, beside the column.
-- Parameters: none.
-- psql: \i sql/schema.sql
-- Notes: adding a column with no default, or with a non-volatile one (a
--   constant, or now(), which is stable: evaluated once, by the ALTER), writes
--   no row: "the default value is evaluated at the time of the statement and
--   the result stored in the table's metadata", and returned for every
--   existing row (PostgreSQL 11 and later; ALTER TABLE, Notes:
--   https://www.postgresql.org/docs/current/sql-altertable.html#SQL-ALTERTABLE-NOTES).
--   A volatile default (gen_random_uuid(), clock_timestamp()) "will require
--   the entire table and its indexes to be rewritten" (same page): event_id
--   below is the one column that does, once, and says why.

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

-- Beyond one FIFO: what priorities, fair claims per tenant, unique jobs, job
-- timeouts and the alerts need. One ALTER, so one lock and at most one pass
-- over the rows. On a table made before these columns, each row gets:
--   enqueued_at   the moment of the upgrade (now(), stable: no rewrite). The
--                 real enqueue time was never written down; the upgrade's is
--                 a floor, so a wait measured from it is never longer than the
--                 real one. A new row gets now() from this default (enqueue.sql
--                 leaves it to it), the moment run_at defaults to, and nothing
--                 moves it afterwards (a retry moves run_at, never enqueued_at).
--   attempted_at  NULL (not recorded), until its next claim writes it.
--   finished_at   NULL (not recorded). complete.sql writes it on done, fail.sql
--                 and reap.sql on dead; requeue_dead.sql clears it.
--   priority      0, the first to run (a constant: no rewrite).
--   tenant        NULL: nobody's; unique_key NULL: not unique.
--   event_id      a UUID of its own. It names an event to the broker, which
--                 drops a second message with the same id inside its window, so
--                 it must never repeat; the bigint id can (a TRUNCATE ...
--                 RESTART IDENTITY, or a new primary after an asynchronous
--                 failover, hands ids out again). gen_random_uuid() (built in
--                 since PostgreSQL 13) is volatile, so this ALTER rewrites the
--                 table and its indexes, once, under an ACCESS EXCLUSIVE lock:
--                 measured on a 2-CPU machine under heavy load (load average
--                 13), 4.6 s for 100,000 rows and 50 s for 1,000,000; the next
--                 open takes milliseconds. A lesson resets its database when it
--                 starts, so what is upgraded is a database the CLI (--db) or
--                 a lesson run with reset=False kept: a learner's, small. That
--                 buys every row, the old ones too, an id and NOT NULL in one
--                 step. On a large
--                 production table you would not hold that lock: add the column
--                 with no default, SET DEFAULT gen_random_uuid() (new rows
--                 only), fill the ready and running rows in batches, then
--                 ADD CONSTRAINT ... CHECK (event_id IS NOT NULL) NOT VALID and
--                 VALIDATE CONSTRAINT, which waits on no writer.
-- No unique index on event_id: 122 random bits do not repeat in practice, and
-- an index over every row, done rows included, would cost each enqueue.
ALTER TABLE jobs
  ADD COLUMN IF NOT EXISTS enqueued_at  timestamptz NOT NULL DEFAULT now(),
  ADD COLUMN IF NOT EXISTS attempted_at timestamptz,
  ADD COLUMN IF NOT EXISTS finished_at  timestamptz,
  ADD COLUMN IF NOT EXISTS priority     smallint    NOT NULL DEFAULT 0
                           CHECK (priority BETWEEN 0 AND 9),
  ADD COLUMN IF NOT EXISTS tenant       text
                           CHECK (char_length(tenant) BETWEEN 1 AND 200),
  ADD COLUMN IF NOT EXISTS unique_key   text
                           CHECK (char_length(unique_key) BETWEEN 1 AND 200),
  ADD COLUMN IF NOT EXISTS event_id     uuid        NOT NULL DEFAULT gen_random_uuid();

-- Beside jobs_ready_idx, which stays the FIFO claim's index as taught:
-- the priority claim takes the smallest priority with due work, oldest first;
-- the fair claim enumerates the tenants with due work inside one priority and
-- takes each one's oldest (a job with no tenant is in no tenant's line, and
-- costs this index nothing); a key is unique within its kind while its job is
-- ready or running (another kind's job with the same key is never dropped,
-- and a done or dead job frees its key).
-- One line each, so lesson 08's listing of the schema's indexes shows each whole.
CREATE INDEX IF NOT EXISTS jobs_ready_priority_idx ON jobs (priority, run_at) WHERE status = 'ready';
CREATE INDEX IF NOT EXISTS jobs_ready_tenant_priority_idx ON jobs (priority, tenant, run_at) WHERE status = 'ready' AND tenant IS NOT NULL;
CREATE UNIQUE INDEX IF NOT EXISTS jobs_live_unique_key_idx ON jobs (kind, unique_key) WHERE unique_key IS NOT NULL AND status IN ('ready', 'running');

-- Retry policy and job timeout per kind. A kind with no row keeps fail.sql's
-- values, which are the defaults here: 10 s doubling per try up to one hour,
-- 5 tries, no timeout. The bounds keep every backoff an interval PostgreSQL
-- can hold (at most 30 days times 2^20, the exponent's cap) and refuse NaN,
-- which compares greater than every number.
CREATE TABLE IF NOT EXISTS job_kinds (
  kind           text   PRIMARY KEY,
  backoff_base_s float8 NOT NULL DEFAULT 10   CHECK (backoff_base_s > 0),
  backoff_cap_s  float8 NOT NULL DEFAULT 3600 CHECK (backoff_cap_s <= 2592000),
  max_attempts   int    NOT NULL DEFAULT 5    CHECK (max_attempts >= 1),
  timeout_s      float8                       CHECK (timeout_s > 0 AND timeout_s <= 2592000),
  CONSTRAINT job_kinds_base_within_cap CHECK (backoff_base_s <= backoff_cap_s)
);

-- A shared rate limit per kind: one token bucket row per limited kind, which
-- every Worker process takes its tokens from (take_tokens.sql), so the limit
-- holds across processes and machines. tokens is what was left at
-- refilled_at; the bucket refills at the kind's rate and holds at most one
-- second of it. granted is what the last take handed out (a take's answer:
-- RETURNING sees only the row it wrote).
CREATE TABLE IF NOT EXISTS rate_limits (
  kind        text        PRIMARY KEY,
  tokens      float8      NOT NULL CHECK (tokens >= 0),
  granted     int         NOT NULL CHECK (granted >= 0),
  refilled_at timestamptz NOT NULL
);
