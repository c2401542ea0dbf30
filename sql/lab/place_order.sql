-- lab/place_order.sql: LAB HELPER. The store's business write: save one order
-- and return its id. Run it in the same transaction as enqueue.sql, so the
-- order and its receipt job commit, or vanish, together.
-- Safe: yes, inserts only.
-- Parameters: email (text), total (numeric).

INSERT INTO orders (email, total) VALUES (:'email', :'total') RETURNING id;
