-- lab/seconds_since.sql: LAB HELPER. Seconds from a moment to now(), on the
-- server's clock, so a lesson times a span with the same clock that set run_at.
-- Safe: yes, read-only.
-- Parameters: since (timestamptz).

SELECT extract(epoch FROM now() - :'since'::timestamptz)::float8 AS seconds;
