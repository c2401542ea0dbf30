-- lab/record_receipt_sent.sql: LAB HELPER. The idempotent handler's first
-- step: record that this order's receipt is being sent. Returns the order id
-- if this call made the record, no row if one was already there (then the
-- handler sends nothing).
-- Safe: yes.
-- Parameters: order_id (bigint), worker (text).

INSERT INTO receipts_sent (order_id, sent_by) VALUES (:order_id, :'worker')
ON CONFLICT (order_id) DO NOTHING
RETURNING order_id;
