-- lab/event_ids.sql: LAB HELPER. The event id (schema.sql's event_id) of each
-- of these jobs, for a relay that claimed them with the plain claim.sql, whose
-- rows do not carry it (lesson 11's contrast with claim_in_key_order.sql, which
-- returns it itself).
-- Safe: yes, read-only.
-- Parameters: ids (bigint[]).

SELECT id, event_id FROM jobs WHERE id = ANY(:'ids'::bigint[]);
