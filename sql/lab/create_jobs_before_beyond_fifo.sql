-- lab/create_jobs_before_beyond_fifo.sql: LAB HELPER. The jobs table as
-- schema.sql made it before the beyond-FIFO columns (enqueued_at, attempted_at,
-- finished_at, priority, tenant, unique_key, event_id) existed: the shape of a
-- learner's database from then, which schema.sql must upgrade in place. Its
-- indexes are left to schema.sql, which creates whichever are missing.
-- Safe: only in a test's own database, after lab/drop_jobs_tables.sql.
-- Parameters: none.

CREATE TABLE jobs (
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
