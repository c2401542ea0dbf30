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
-- Measured (EXPLAIN (ANALYZE, BUFFERS), rolled back) on 200,000 jobs, 100,000
--   of them live with a key each (ten times the largest lab of lesson 10c), on
--   PostgreSQL 18.6 and 15.18 with shared_buffers 128 MB and on 18.6 with 1 GB,
--   the same buffers on each: a new key 17 buffers; a duplicate 19 buffers
--   here against 5 for enqueue_unique.sql's DO NOTHING. The no-op update is a
--   HOT update (the key's value does not change), so its versions are pruned
--   in the page; with the horizon held by an open transaction in another
--   database of the server, 1,000 duplicates of one key left a chain that a
--   further duplicate read in 29 buffers (27 with DO NOTHING) on both versions.

INSERT INTO jobs (kind, payload, unique_key)
VALUES (:'kind', :'payload', :'unique_key')
ON CONFLICT (kind, unique_key) WHERE unique_key IS NOT NULL AND status IN ('ready', 'running')
DO UPDATE SET unique_key = excluded.unique_key
RETURNING id;
