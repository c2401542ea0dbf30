-- lab/receipts_sent_create.sql: LAB HELPER. The idempotent handler's record:
-- "receipt for order N sent", under a unique key, so a second run of the same
-- job finds it and sends nothing.
-- Safe: yes. Creates the table if missing.
-- Parameters: none.

CREATE TABLE IF NOT EXISTS receipts_sent (
  order_id bigint PRIMARY KEY,
  sent_by  text NOT NULL
);
