-- enqueue_unique.sql: add one job with a priority, a tenant and a unique key,
-- or, when a job of the same kind holding the same key is live (ready or
-- running), add nothing. Returns the new job's id, or no row when a live job
-- holds the key (the caller then reads that job's id with live_unique_ids.sql). Run it in the caller's transaction, like enqueue.sql.
-- Safe: yes. A key with no live job is free: a done or dead job gives its key
--   up, so the same key can run again later (keeping keys past completion
--   needs a table of keys with its own retention, not built here).
-- Parameters: kind (text), payload (jsonb), run_at (timestamptz, NULL = now),
--             max_attempts (int, NULL = the kind's in job_kinds, or 5), priority (int, 0..9, 0 first),
--             tenant (text or NULL), unique_key (text or NULL: never a duplicate).
-- Notes: ON CONFLICT names the partial unique index jobs_live_unique_key_idx
--   by its columns and predicate (schema.sql), so the key is scoped by kind.
--   When another session's insert of the key is still uncommitted, this one
--   waits for it: if that commits, nothing is added here; if it rolls back,
--   the row is added (INSERT, "ON CONFLICT Clause":
--   https://www.postgresql.org/docs/18/sql-insert.html#SQL-ON-CONFLICT).
--   DO NOTHING returns no row for the job it kept, and this statement's
--   snapshot may predate that job's commit, so the id is read by a second
--   statement with a new snapshot (under READ COMMITTED).
--   Under REPEATABLE READ or SERIALIZABLE the snapshot is the transaction's,
--   and a key held by a job committed after it cannot be read; PostgreSQL
--   then refuses the insert itself ("could not serialize access due to
--   concurrent update", SQLSTATE 40001: ON CONFLICT DO NOTHING at those
--   levels, https://www.postgresql.org/docs/18/transaction-iso.html), so no
--   duplicate is added, and the library raises pgq.UniqueRace: the caller's
--   whole transaction must run again (tests/test_unique_jobs.py, 8 sessions).

INSERT INTO jobs (kind, payload, run_at, max_attempts, priority, tenant, unique_key)
VALUES (:'kind', :'payload', coalesce(:'run_at'::timestamptz, now()),
       coalesce(:'max_attempts'::int, (SELECT k.max_attempts FROM job_kinds k WHERE k.kind = :'kind'), 5),
        :'priority', :'tenant', :'unique_key')
ON CONFLICT (kind, unique_key) WHERE unique_key IS NOT NULL AND status IN ('ready', 'running')
DO NOTHING
RETURNING id;
