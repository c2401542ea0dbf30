-- lab/age_bucket.sql: LAB HELPER. Move a rate limit's bucket's last refill
-- back by some seconds, as if nobody had taken a token meanwhile, so a test
-- sees the refill (take_tokens.sql) without waiting for it.
-- Safe: only in a test's own database.
-- Parameters: kind (text), seconds (float8).

UPDATE rate_limits
SET refilled_at = refilled_at - make_interval(secs => :'seconds')
WHERE kind = :'kind'
RETURNING kind;
