-- enqueue_many_unique.sql: add many jobs of one kind, each with its own unique
-- key (or none), one priority and one tenant, in one statement; a job whose
-- key a live job of the kind already holds (ready or running, or an earlier
-- element of this array) is not added. Returns (id, unique_key) for each job
-- added, in array order; the caller reads the ids of the keys it was refused
-- with live_unique_ids.sql. Run it in the caller's transaction, then
-- notify_ready.sql once.
-- Safe: yes.
-- Parameters: kind (text), payloads (jsonb, an array: one element per job),
--             unique_keys (text[], as long as payloads; NULL elements: no key),
--             run_at (timestamptz, NULL = now), max_attempts (int, NULL = the kind's in job_kinds, or 5),
--             priority (int, 0..9), tenant (text or NULL).
-- Notes: see enqueue_unique.sql for how ON CONFLICT ... DO NOTHING waits on
--   another session's uncommitted insert of a key.

INSERT INTO jobs (kind, payload, run_at, max_attempts, priority, tenant, unique_key)
SELECT :'kind', p.payload, coalesce(:'run_at'::timestamptz, now()),
       coalesce(:'max_attempts'::int, (SELECT k.max_attempts FROM job_kinds k WHERE k.kind = :'kind'), 5),
       :'priority', :'tenant', k.unique_key
FROM jsonb_array_elements(:'payloads'::jsonb) WITH ORDINALITY AS p (payload, n)
JOIN unnest(:'unique_keys'::text[]) WITH ORDINALITY AS k (unique_key, n) USING (n)
ORDER BY n
ON CONFLICT (kind, unique_key) WHERE unique_key IS NOT NULL AND status IN ('ready', 'running')
DO NOTHING
RETURNING id, unique_key;
