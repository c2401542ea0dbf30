-- enqueue_many.sql: add many jobs of one kind in one statement, one row per
-- payload, ids in payload order. Run it in the caller's transaction, like
-- enqueue.sql, then notify_ready.sql once for the whole statement.
-- Safe: yes.
-- Parameters: kind (text), payloads (text[], each a JSON document),
--             run_at (timestamptz, NULL = now), max_attempts (int).

INSERT INTO jobs (kind, payload, run_at, max_attempts)
SELECT :'kind', payload::jsonb, coalesce(:'run_at'::timestamptz, now()), :'max_attempts'
FROM unnest(:'payloads'::text[]) WITH ORDINALITY AS p (payload, n)
ORDER BY n
RETURNING id;
