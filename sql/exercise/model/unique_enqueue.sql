-- exercise/model/unique_enqueue.sql: the model answer to lesson 10c's Your turn
-- (10c/unique_enqueue): add a job unless a live job of its kind holds the key,
-- and return one id either way, the new job's or the live one's, in one statement.
-- Safe: yes. A duplicate writes a new version of the live job's row (a no-op
--   update) and holds its row lock until the caller commits: a claim skips that
--   job meanwhile (SKIP LOCKED), and each duplicate leaves one dead version
--   for VACUUM. The library's enqueue_unique.sql uses DO NOTHING and reads the
--   id in a second statement instead, writing nothing for a duplicate.
-- Parameters: kind (text), payload (jsonb), unique_key (text).
-- Notes: the conflict target names the partial unique index
--   jobs_live_unique_key_idx by its columns and predicate (sql/schema.sql).
--   An insert that meets an uncommitted insert of the key waits for it; once
--   it commits, DO UPDATE locks the committed row and RETURNING gives its id
--   (PostgreSQL 18, INSERT, "ON CONFLICT Clause": "the row proposed for
--   insertion ... is updated", https://www.postgresql.org/docs/18/sql-insert.html).
--   If that row stops being live (a worker finished it) before the lock, the
--   insert is tried again and adds the job.

INSERT INTO jobs (kind, payload, unique_key)
VALUES (:'kind', :'payload', :'unique_key')
ON CONFLICT (kind, unique_key) WHERE unique_key IS NOT NULL AND status IN ('ready', 'running')
DO UPDATE SET unique_key = excluded.unique_key
RETURNING id;
