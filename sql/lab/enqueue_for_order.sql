-- lab/enqueue_for_order.sql: LAB HELPER. Enqueue one job of `kind` for an order,
-- tagged with an `event` so two jobs of one kind for one order differ, as a
-- producer's enqueue would with a unique index in place: ON CONFLICT DO NOTHING,
-- so a job the index refuses comes back as no row (tests/test_interview_sql.py
-- checks no model answer's unique index drops a job of another kind).
-- Safe: yes, inserts one job at most.
-- Parameters: kind (text), order_id (int), event (text).

INSERT INTO jobs (kind, payload)
VALUES (:'kind', jsonb_build_object('order_id', :order_id::int, 'event', :'event'::text))
ON CONFLICT DO NOTHING
RETURNING id;
