-- lab/seed_order_events.sql: LAB HELPER. A relay's backlog in one statement:
-- :orders orders' three events each (created, paid, shipped), all unsent and
-- due, an order's three written together (adjacent ids, run_at a microsecond
-- apart), as after an outage. Real checkout writes them with enqueue.sql.
-- Safe: yes, inserts only.
-- Parameters: kind (text), orders (int).

INSERT INTO jobs (kind, payload, run_at)
SELECT :'kind',
       jsonb_build_object('order_id', o, 'seq', s,
                          'event', (ARRAY['created', 'paid', 'shipped'])[s]),
       now() - interval '1 hour' + (3 * o + s) * interval '1 microsecond'
FROM generate_series(1, :orders) AS o, generate_series(1, 3) AS s
ORDER BY o, s;
