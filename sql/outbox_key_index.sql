-- outbox_key_index.sql: the index claim_in_key_order.sql looks up "an earlier
-- unsent event of this order" in: unsent rows only (ready, running, dead), by
-- kind, order id and id, so it stays as small as the backlog however many
-- sent rows pile up.
-- Safe: yes. Creates the index if it is missing (a short lock on jobs).
-- Parameters: none.
-- Notes: IF NOT EXISTS keeps an index of this name as it is; a database made
--   before dead rows counted as unsent needs lab/drop_index.sql first (the
--   labs' prepare_outbox does that).

CREATE INDEX IF NOT EXISTS jobs_unsent_key_idx
  ON jobs (kind, (payload->>'order_id'), id)
  WHERE status IN ('ready', 'running', 'dead');
