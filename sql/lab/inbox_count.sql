-- lab/inbox_count.sql: LAB HELPER. How many receipt emails one order's
-- customer got.
-- Safe: yes, read-only.
-- Parameters: order_id (bigint).

SELECT count(*) FROM inbox WHERE order_id = :order_id;
