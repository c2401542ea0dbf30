-- notify_ready.sql: wake idle workers. Sends only the kind, never the data:
-- a payload must stay under 8,000 bytes, and a notification is a hint, not a
-- stored message. Delivered only when the surrounding transaction commits.
-- Safe: yes.
-- Parameters: kind (text).

SELECT pg_notify('jobs_ready', :'kind');
