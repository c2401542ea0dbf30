-- exercise/model/enqueue_returning_notify.sql: a right answer to lesson 07's
-- exercise, without a WITH query: the INSERT of one job notifies jobs_ready in
-- its own RETURNING, once, with the new job's id. Used by the lesson 07
-- checker's tests.
-- Safe: yes.
-- Parameters: kind (text), payload (jsonb).

INSERT INTO jobs (kind, payload) VALUES (:'kind', :'payload')
RETURNING id, pg_notify('jobs_ready', id::text);
