-- lab/inbox_senders.sql: LAB HELPER. Who sent each receipt email in one
-- order's inbox, oldest first: the rows the workers' handlers left behind.
-- Safe: yes, read-only.
-- Parameters: order_id (bigint).

SELECT sent_by FROM inbox WHERE order_id = :order_id ORDER BY id;
