-- lab/empty_bucket.sql: LAB HELPER. Empty a rate limit's bucket now, as a
-- kind's first take leaves it (take_tokens.sql), so every run of the quota
-- lab starts from the same bucket: a bucket left full by the last run would
-- give the next one a second's burst that the first run never had.
-- Safe: only in a lesson's or a test's own database.
-- Parameters: kind (text).

UPDATE rate_limits
SET tokens = 0, granted = 0, refilled_at = clock_timestamp()
WHERE kind = :'kind'
RETURNING kind;
