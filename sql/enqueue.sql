-- enqueue.sql: add one job. Run it in the same transaction as the business
-- write (the order), so a rollback leaves no job behind.
-- enqueued_at (now(), the moment run_at defaults to) and event_id (a new
-- random UUID) come from their column defaults (schema.sql), never from this
-- text: the worker role has no grant on either (roles.sql), so no caller can
-- write a false enqueue time or reuse an event id, and nothing moves them later.
-- Safe: yes.
-- Parameters: kind (text), payload (jsonb), run_at (timestamptz, NULL = now),
--             max_attempts (int, NULL = the kind's
--             max_attempts in job_kinds, or 5 for a kind with no row).
-- psql: \set kind send_receipt \set payload '{"order_id": 101}'
--       \set run_at now \set max_attempts 5, then notify_ready.sql.

INSERT INTO jobs (kind, payload, run_at, max_attempts)
VALUES (:'kind', :'payload', coalesce(:'run_at'::timestamptz, now()),
       coalesce(:'max_attempts'::int, (SELECT k.max_attempts FROM job_kinds k WHERE k.kind = :'kind'), 5))
RETURNING id;
