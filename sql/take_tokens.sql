-- take_tokens.sql: take up to `wanted` whole tokens from a kind's shared
-- bucket, and say how many were granted. The bucket refills at `per_second`
-- and holds at most one second of tokens (at least one token, so a rate
-- under 1/s still grants one now and then). A kind's first take makes its
-- bucket empty, so a fleet that starts together gets no burst it has not
-- earned; a bucket left unused for a second is full. So over any window of t
-- seconds the takes grant at most per_second x (t + 1): the rate, plus one
-- second of burst.
-- Concurrent takers queue on the row (ON CONFLICT DO UPDATE locks it, then
-- works out SET from the row as the last taker committed it), so none spends
-- a token another already took. The clock is read once, in `clock`, as the
-- statement starts: a take that waited for the row may read a clock older
-- than the refill it finds, and then counts no refill (greatest(0, ...)) and
-- leaves refilled_at where it is, so no stretch of time is counted twice.
-- Safe: yes. One row per kind, locked for the length of the statement.
-- Parameters: kind (text), per_second (float8, > 0), wanted (int, >= 0).

WITH clock AS (SELECT clock_timestamp() AS at)
INSERT INTO rate_limits AS b (kind, tokens, granted, refilled_at)
SELECT :'kind', 0, 0, clock.at
FROM clock
ON CONFLICT (kind) DO UPDATE
SET granted = least(:'wanted'::int, floor(least(
                greatest(:'per_second'::float8, 1),
                b.tokens + :'per_second'::float8
                  * greatest(0, extract(epoch FROM (SELECT at FROM clock) - b.refilled_at)))))::int,
    tokens = least(
               greatest(:'per_second'::float8, 1),
               b.tokens + :'per_second'::float8
                 * greatest(0, extract(epoch FROM (SELECT at FROM clock) - b.refilled_at)))
             - least(:'wanted'::int, floor(least(
                 greatest(:'per_second'::float8, 1),
                 b.tokens + :'per_second'::float8
                   * greatest(0, extract(epoch FROM (SELECT at FROM clock) - b.refilled_at))))),
    refilled_at = greatest(b.refilled_at, (SELECT at FROM clock))
RETURNING granted;
