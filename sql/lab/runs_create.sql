-- lab/runs_create.sql: LAB HELPER. A ledger of handler runs, written by the
-- handlers themselves on the server, so runs are counted by the database and
-- not by the script that started the workers (which may be another process).
-- Safe: yes, in a lab's or test's own database. Creates it if missing.
-- Parameters: none.

CREATE TABLE IF NOT EXISTS job_runs (
  job_id      bigint      NOT NULL,
  fence_token bigint      NOT NULL,
  worker      text        NOT NULL,
  started_at  timestamptz NOT NULL DEFAULT clock_timestamp()
);
