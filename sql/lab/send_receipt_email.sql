-- lab/send_receipt_email.sql: LAB HELPER. "Send" a receipt email: add it to
-- the customer's inbox. Stands in for a call to a mail provider.
-- Safe: yes, inserts only.
-- Parameters: order_id (bigint), worker (text).

INSERT INTO inbox (order_id, sent_by) VALUES (:order_id, :'worker');
