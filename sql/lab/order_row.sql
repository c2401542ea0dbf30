-- lab/order_row.sql: LAB HELPER. One order, to see whether it survived its
-- transaction.
-- Safe: yes, read-only.
-- Parameters: id (bigint).

SELECT * FROM orders WHERE id = :id;
