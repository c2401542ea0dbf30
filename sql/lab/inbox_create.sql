-- lab/inbox_create.sql: LAB HELPER. The customer's inbox for the fencing lab:
-- one row per receipt email a worker sent. Sending an email cannot be undone,
-- and neither can a row here (the lab never deletes one mid-run).
-- Safe: yes. Creates the table if missing.
-- Parameters: none.

CREATE TABLE IF NOT EXISTS inbox (
  id       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  order_id bigint      NOT NULL,
  sent_by  text        NOT NULL,
  sent_at  timestamptz NOT NULL DEFAULT clock_timestamp()
);
