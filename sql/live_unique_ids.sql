-- live_unique_ids.sql: the live (ready or running) job of a kind holding each
-- of these unique keys: what a unique enqueue returns when it added nothing.
-- Safe: yes, read only.
-- Parameters: kind (text), unique_keys (text[]).
-- Notes: served by jobs_live_unique_key_idx (kind, unique_key), whose
--   predicate the literal statuses here match. A key missing from the result
--   had its job finish since the enqueue looked: the caller tries again.

SELECT unique_key, id
FROM jobs
WHERE kind = :'kind' AND unique_key = ANY(:'unique_keys'::text[])
  AND unique_key IS NOT NULL AND status IN ('ready', 'running');
