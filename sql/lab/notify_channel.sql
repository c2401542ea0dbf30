-- lab/notify_channel.sql: LAB HELPER. Send one notification on a channel with
-- any payload. Like notify_ready.sql it is delivered only when the
-- surrounding transaction commits; the payload must stay under 8,000 bytes.
-- Safe: yes.
-- Parameters: channel (text), payload (text).

SELECT pg_notify(:'channel', :'payload');
