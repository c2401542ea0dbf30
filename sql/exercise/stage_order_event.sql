-- exercise/stage_order_event.sql: LAB HELPER. Make one seeded job an order's
-- event: its payload names the order and the event's place in it, as the
-- outbox's events do, so a check can replay a relay's per-key story.
-- Safe: only in a scratch database: it rewrites a job's payload by hand.
-- Parameters: id (bigint), order_id (bigint), seq (int).

UPDATE jobs
SET payload = jsonb_build_object('order_id', :order_id, 'seq', :seq)
WHERE id = :id
RETURNING id;
