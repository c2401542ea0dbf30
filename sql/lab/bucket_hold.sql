-- lab/bucket_hold.sql: LAB HELPER. Lock one kind's rate-limit bucket row, so
-- the next take_tokens.sql of that kind waits behind this transaction (run it
-- inside one; the lock lasts until it ends). A test holds a Worker there,
-- after its claim has committed, to end its session at that moment.
-- Safe: NO outside a lab's own database: every Worker of the kind waits.
-- Parameters: kind (text).

SELECT kind FROM rate_limits WHERE kind = :'kind' FOR UPDATE;
