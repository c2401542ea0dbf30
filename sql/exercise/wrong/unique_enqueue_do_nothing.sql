-- exercise/wrong/unique_enqueue_do_nothing.sql: TEACHING ONLY, WRONG. A wrong answer
-- to 10c/unique_enqueue (the seeded attempt). The key is held, but a
-- duplicate returns no row: DO NOTHING returns only the rows it inserted, so
-- the caller cannot tell which job carries its work.
-- Safe: yes (a scratch database).
-- Parameters: kind (text), payload (jsonb), unique_key (text).

INSERT INTO jobs (kind, payload, unique_key)
VALUES (:'kind', :'payload', :'unique_key')
ON CONFLICT (kind, unique_key) WHERE unique_key IS NOT NULL AND status IN ('ready', 'running')
DO NOTHING
RETURNING id;
