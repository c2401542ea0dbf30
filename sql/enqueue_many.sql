-- enqueue_many.sql: add many jobs of one kind in one statement, one row per
-- element of a JSON array, ids in array order. Run it in the caller's
-- transaction, like enqueue.sql, then notify_ready.sql once for the whole
-- statement. Each row's enqueued_at and event_id come from their column
-- defaults, as in enqueue.sql (one enqueued_at for the whole statement).
-- Safe: yes.
-- Parameters: kind (text), payloads (jsonb, an array: one element per job),
--             run_at (timestamptz, NULL = now), max_attempts (int, NULL = the kind's
--             max_attempts in job_kinds, or 5 for a kind with no row).

INSERT INTO jobs (kind, payload, run_at, max_attempts)
SELECT :'kind', p.payload, coalesce(:'run_at'::timestamptz, now()),
       coalesce(:'max_attempts'::int, (SELECT k.max_attempts FROM job_kinds k WHERE k.kind = :'kind'), 5)
FROM jsonb_array_elements(:'payloads'::jsonb) WITH ORDINALITY AS p (payload, n)
ORDER BY p.n
RETURNING id;
